"""q45: a radix prefix trie over KV slots (SGLang's RadixCache). Fill in the methods;
`grader show prefix-trie` prints the full task. Check with: grader check prefix-trie this_file.py"""


class RadixCache:
    def __init__(self):
        pass

    def match_prefix(self, tokens):
        raise NotImplementedError("match_prefix: return (slots, node handle); split mid-edge")

    def insert(self, tokens, slots):
        raise NotImplementedError("insert: return how many leading tokens were cached already")

    def lock(self, node):
        raise NotImplementedError("lock: +1 on the node and every ancestor")

    def unlock(self, node):
        raise NotImplementedError("unlock: -1 along the same path")

    def lock_ref(self, node):
        raise NotImplementedError("lock_ref")

    def evictable_size(self):
        raise NotImplementedError("evictable_size")

    def protected_size(self):
        raise NotImplementedError("protected_size")

    def evict(self, num_tokens):
        raise NotImplementedError("evict: free LRU unlocked leaves; return the freed slots")
