"""Reference solution for q45: a radix prefix trie over KV slots, after SGLang's RadixCache.

Each node owns one edge: a run of tokens, the KV slots that hold them, a lock count and the
tick of a logical clock when it was last walked. A walk that ends inside an edge splits it,
so a lock always covers exactly what was matched. Eviction frees whole unlocked leaves, least
recently used first; a parent whose last child goes becomes a leaf in its turn.
"""

import heapq
import itertools


class Node:
    def __init__(self, node_id, parent, tokens, slots, stamp):
        self.id, self.parent, self.tokens, self.slots = node_id, parent, tokens, slots
        self.children = {}      # first token of the child's edge -> child
        self.lock_ref = 0       # locks held on this node or any node below it
        self.stamp = stamp      # logical clock tick of the last walk through it


class RadixCache:
    def __init__(self):
        self._ids, self._clock = itertools.count(), itertools.count(1)
        self.root = Node(next(self._ids), None, [], [], 0)
        self.nodes = {self.root.id: self.root}      # handle -> live node
        self.evictable, self.protected = 0, 0

    def _new(self, parent, tokens, slots):
        node = Node(next(self._ids), parent, tokens, slots, next(self._clock))
        self.nodes[node.id] = node
        return node

    def _split(self, node, at):
        """The first `at` tokens move to a new upper node that inherits the locks."""
        upper = self._new(node.parent, node.tokens[:at], node.slots[:at])
        upper.lock_ref, upper.children = node.lock_ref, {node.tokens[at]: node}
        node.parent.children[upper.tokens[0]] = upper
        node.parent, node.tokens, node.slots = upper, node.tokens[at:], node.slots[at:]
        return upper

    def _walk(self, tokens):
        """Longest cached prefix: (its last node, its length, its slots), stamping the path."""
        node, depth, slots = self.root, 0, []
        while depth < len(tokens) and tokens[depth] in node.children:
            child = node.children[tokens[depth]]
            child.stamp = next(self._clock)
            n = len(child.tokens) if tokens[depth:depth + len(child.tokens)] == child.tokens else 0
            while n < len(child.tokens) and depth + n < len(tokens) \
                    and child.tokens[n] == tokens[depth + n]:
                n += 1
            if n < len(child.tokens):       # the match ends inside this edge
                child = self._split(child, n)
            node, depth = child, depth + n
            slots += child.slots
        return node, depth, slots

    def match_prefix(self, tokens):
        node, _, slots = self._walk(list(tokens))
        return slots, node.id

    def insert(self, tokens, slots):
        if len(tokens) != len(slots):
            raise ValueError(f"insert: {len(tokens)} tokens but {len(slots)} slots")
        node, cached, _ = self._walk(list(tokens))
        if cached < len(tokens):
            leaf = self._new(node, list(tokens[cached:]), list(slots[cached:]))
            node.children[leaf.tokens[0]] = leaf
            self.evictable += len(leaf.tokens)
        return cached

    def _path(self, handle):
        """The node named by `handle`, then each ancestor up to (not including) the root."""
        if handle not in self.nodes:
            raise ValueError(f"node {handle} is not in the cache")
        node, path = self.nodes[handle], []
        while node is not self.root:
            path.append(node)
            node = node.parent
        return path

    def _protect(self, node, sign):
        self.evictable -= sign * len(node.tokens)
        self.protected += sign * len(node.tokens)

    def lock(self, node):
        for n in self._path(node):
            if n.lock_ref == 0:     # 0 -> 1: its tokens stop being evictable
                self._protect(n, +1)
            n.lock_ref += 1

    def unlock(self, node):
        path = self._path(node)
        if path and path[0].lock_ref == 0:
            raise ValueError(f"unlock: node {node} is not locked")
        for n in path:
            n.lock_ref -= 1
            if n.lock_ref == 0:
                self._protect(n, -1)

    def lock_ref(self, node):
        if node not in self.nodes:
            raise ValueError(f"node {node} is not in the cache")
        return self.nodes[node].lock_ref

    def evictable_size(self):
        return self.evictable

    def protected_size(self):
        return self.protected

    def evict(self, num_tokens):
        leaves = [(n.stamp, n.id, n) for n in self.nodes.values()
                  if not n.children and n is not self.root]
        heapq.heapify(leaves)
        freed = []
        while len(freed) < num_tokens and leaves:
            _, _, leaf = heapq.heappop(leaves)
            if leaf.lock_ref:
                continue
            freed += leaf.slots
            del leaf.parent.children[leaf.tokens[0]], self.nodes[leaf.id]
            self.evictable -= len(leaf.tokens)
            parent = leaf.parent
            if not parent.children and parent is not self.root:
                heapq.heappush(leaves, (parent.stamp, parent.id, parent))
        return freed
