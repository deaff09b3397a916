"""The grader's model of a radix prefix cache, kept flat so it shares no code with a trie.

The cache is a map from every cached token prefix to the slot of its last token; it is
prefix-closed (a cached sequence's prefixes are cached too). A *node* is a prefix where an
edge ends; its edge is the tokens after its parent's end, its parent the longest proper
prefix that is also a node. Each node carries a serial (its identity: when an edge is split
the lower half keeps it, as SGLang's TreeNode does), a lock count, and the clock tick of the
last walk through it. Everything is recomputed from these maps, so the model stays obviously
right at the sizes the grader uses (a few dozen tokens).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass


@dataclass
class ModelNode:
    serial: int
    end: tuple          # the whole token prefix this node ends
    lock: int = 0       # locks through this node (its own and its descendants')
    stamp: int = 0      # logical clock tick of the last walk through it


class TrieModel:
    def __init__(self):
        self.slot: dict[tuple, int] = {}          # cached prefix -> slot of its last token
        self.owner: dict[int, tuple] = {}         # held slot -> the prefix it holds
        self.nodes: dict[tuple, ModelNode] = {}   # node end -> node
        self.by_serial: dict[int, ModelNode] = {}
        self.split_born: set[int] = set()         # serials of upper halves made by a split
        self.clock = 0
        self._serials = itertools.count(1)

    # structure -----------------------------------------------------------------------
    def cached_len(self, tokens: tuple) -> int:
        k = 0
        while k < len(tokens) and tokens[:k + 1] in self.slot:
            k += 1
        return k

    def parent_len(self, end: tuple) -> int:
        return max((i for i in range(1, len(end)) if end[:i] in self.nodes), default=0)

    def edge(self, node: ModelNode) -> tuple:
        return node.end[self.parent_len(node.end):]

    def node_holding(self, prefix: tuple) -> ModelNode:
        """The node whose edge holds the last token of a cached prefix."""
        return min((n for e, n in self.nodes.items()
                    if len(e) >= len(prefix) and e[:len(prefix)] == prefix),
                   key=lambda n: len(n.end))

    def path(self, node: ModelNode | None) -> list[ModelNode]:
        """The node and every ancestor below the root (the root is None)."""
        if node is None:
            return []
        return [self.nodes[node.end[:i]] for i in range(1, len(node.end) + 1)
                if node.end[:i] in self.nodes]

    def is_leaf(self, node: ModelNode) -> bool:
        n = len(node.end)
        return not any(len(e) > n and e[:n] == node.end for e in self.nodes)

    def total(self) -> int:
        return len(self.slot)

    def protected(self) -> int:
        return sum(len(self.edge(n)) for n in self.nodes.values() if n.lock)

    # operations ----------------------------------------------------------------------
    def _tick(self, node: ModelNode) -> None:
        self.clock += 1
        node.stamp = self.clock

    def _new(self, end: tuple, lock: int = 0) -> ModelNode:
        node = ModelNode(next(self._serials), end, lock)
        self.nodes[end] = self.by_serial[node.serial] = node
        self._tick(node)
        return node

    def walk(self, tokens: tuple):
        """Stamp the path to the longest cached prefix from the root down, splitting the edge
        it ends inside: the edge's node is stamped, then the new upper node after it.
        Returns (prefix, its node or None for the root, the node split or None)."""
        prefix = tokens[:self.cached_len(tokens)]
        if not prefix:
            return prefix, None, None
        for i in range(1, len(prefix) + 1):
            if prefix[:i] in self.nodes:
                self._tick(self.nodes[prefix[:i]])
        if prefix in self.nodes:
            return prefix, self.nodes[prefix], None
        lower = self.node_holding(prefix)
        self._tick(lower)
        upper = self._new(prefix, lower.lock)
        self.split_born.add(upper.serial)
        return prefix, upper, lower

    def match(self, tokens: tuple):
        prefix, node, lower = self.walk(tokens)
        return [self.slot[prefix[:i]] for i in range(1, len(prefix) + 1)], node, lower

    def insert(self, tokens: tuple, slots: list[int]) -> int:
        prefix, _, _ = self.walk(tokens)
        for i in range(len(prefix) + 1, len(tokens) + 1):
            self.slot[tokens[:i]] = slots[i - 1]
            self.owner[slots[i - 1]] = tokens[:i]
        if len(prefix) < len(tokens):
            self._new(tokens)
        return len(prefix)

    def lock(self, node: ModelNode | None, delta: int = 1) -> None:
        for n in self.path(node):
            n.lock += delta

    def under(self, node: ModelNode, top: ModelNode) -> bool:
        """True if `node` lies strictly below `top`."""
        return len(node.end) > len(top.end) and node.end[:len(top.end)] == top.end

    def evict_order(self) -> list[tuple[ModelNode, int]]:
        """The nodes evict would free if asked for everything, in order, with each one's
        edge length then: what evict(n) frees is a head of this list. Changes nothing."""
        alive, order = dict(self.nodes), []
        while True:
            leaves = [n for e, n in alive.items() if not n.lock and not any(
                len(f) > len(e) and f[:len(e)] == e for f in alive)]
            if not leaves:
                return order
            leaf = min(leaves, key=lambda n: n.stamp)
            parent = max((i for i in range(1, len(leaf.end)) if leaf.end[:i] in alive),
                         default=0)
            order.append((leaf, len(leaf.end) - parent))
            del alive[leaf.end]

    def evict(self, num_tokens: int):
        """Free whole unlocked leaves, oldest stamp first, until num_tokens are freed.
        Returns (freed slots in order, [(edge tokens, their slots), ...] per leaf)."""
        freed, leaves = [], []
        while len(freed) < num_tokens:
            candidates = [n for n in self.nodes.values() if not n.lock and self.is_leaf(n)]
            if not candidates:
                break
            leaf = min(candidates, key=lambda n: n.stamp)
            start = self.parent_len(leaf.end)
            slots = [self.slot.pop(leaf.end[:i]) for i in range(start + 1, len(leaf.end) + 1)]
            for s in slots:
                del self.owner[s]
            del self.nodes[leaf.end], self.by_serial[leaf.serial]
            freed += slots
            leaves.append((list(leaf.end[start:]), slots))
        return freed, leaves
