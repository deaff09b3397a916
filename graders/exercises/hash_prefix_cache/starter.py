"""q47: a hash-chained prefix cache over a KV block pool. Fill in the methods; `grader show
hash-prefix-cache` prints the full task. Check with: grader check hash-prefix-cache this_file.py"""


class PrefixCache:
    def __init__(self, num_blocks, block_size, hash_space):
        self.num_blocks, self.block_size, self.hash_space = num_blocks, block_size, hash_space

    def block_identity_hash(self, parent_hash, block_tokens, extra_keys):
        """The spec's hash of one full block; parent_hash is -1 for a prompt's first block."""
        return hash((parent_hash, tuple(block_tokens), tuple(extra_keys))) % self.hash_space

    def allocate(self, request_id, tokens, extra_keys):
        raise NotImplementedError("allocate: return (block_table, num_cached_tokens)")

    def lookup(self, tokens, extra_keys):
        raise NotImplementedError("lookup: the blocks a new request would hit; change nothing")

    def free(self, request_id):
        raise NotImplementedError("free: drop the request's references, tail first")

    def block_hash(self, block):
        raise NotImplementedError("block_hash: the chained hash of what the block holds, or None")

    def refcount(self, block):
        raise NotImplementedError("refcount")

    def free_count(self):
        raise NotImplementedError("free_count")
