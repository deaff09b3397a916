"""Mutant: a split truncates the node in place and hangs a new node for the tail below it.

A natural first draft, but the handle now names the head: a request that locked the whole edge unlocks only the head, and the tail stays pinned for the life of the server. SGLang's _split_node does the opposite: the old TreeNode keeps the tail (and its id, children and locks) and a new node takes the head.

Property: split
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
        lower = self._new(node, node.tokens[at:], node.slots[at:])
        lower.lock_ref, lower.children = node.lock_ref, node.children
        for child in lower.children.values():
            child.parent = lower
        node.tokens, node.slots = node.tokens[:at], node.slots[:at]
        node.children = {lower.tokens[0]: lower}
        return node

    def _walk(self, tokens):
        """Longest cached prefix: (its last node, its length, its slots), stamping the path."""
        node, depth, slots = self.root, 0, []
        while depth < len(tokens) and tokens[depth] in node.children:
            child = node.children[tokens[depth]]
            child.stamp = next(self._clock)
            n = 0
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
