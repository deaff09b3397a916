"""nano-vllm's BlockManager (GeeeekExplorer/nano-vllm@bb823b3e, nanovllm/engine/block_manager.py)
behind the q47 interface, rewritten in our own words for a test of the spec's claims.

Kept from nano-vllm: one hash -> block id map (a newer block with the same hash overwrites
the entry), a hit accepted when the block's own token ids match, one FIFO deque of free
block ids (empty and cached alike), blocks freed tail first, and at most num_blocks - 1 hits.
Changed for the interface: the block hash is the spec's (xxhash64 in nano-vllm) and includes
the extra keys, which nano-vllm does not have; allocate also hashes the prompt's full blocks,
which nano-vllm does after the step (hash_blocks).
"""

from collections import deque


class Block:
    def __init__(self, block_id):
        self.block_id, self.ref_count, self.hash, self.token_ids = block_id, 0, -1, []


class PrefixCache:
    def __init__(self, num_blocks, block_size, hash_space):
        self.block_size, self.hash_space = block_size, hash_space
        self.blocks = [Block(i) for i in range(num_blocks)]
        self.hash_to_block_id = {}
        self.free_block_ids = deque(range(num_blocks))
        self.used_block_ids = set()
        self.tables = {}

    def compute_hash(self, token_ids, prefix, extra_keys):
        return hash((prefix, tuple(token_ids), tuple(extra_keys))) % self.hash_space

    def lookup(self, tokens, extra_keys):
        """can_allocate's matching loop: never the last block, own token ids compared."""
        size, h, cached = self.block_size, -1, []
        chunks = [tokens[i:i + size] for i in range(0, len(tokens), size)]
        for token_ids in chunks[:-1]:
            h = self.compute_hash(token_ids, h, extra_keys)
            block_id = self.hash_to_block_id.get(h, -1)
            if block_id == -1 or self.blocks[block_id].token_ids != token_ids:
                break
            cached.append(block_id)
        return cached

    def allocate(self, request_id, tokens, extra_keys):
        size = self.block_size
        chunks = [tokens[i:i + size] for i in range(0, len(tokens), size)]
        cached = self.lookup(tokens, extra_keys)
        new_blocks = len(chunks) - sum(b in self.used_block_ids for b in cached)
        if len(self.free_block_ids) < new_blocks:
            raise MemoryError("not enough free blocks")
        for block_id in cached:
            block = self.blocks[block_id]
            if block_id in self.used_block_ids:
                block.ref_count += 1
            else:
                block.ref_count = 1
                self.free_block_ids.remove(block_id)
                self.used_block_ids.add(block_id)
        table = cached + [self._allocate_block() for _ in chunks[len(cached):]]
        h = self.blocks[table[len(cached) - 1]].hash if cached else -1
        for block_id, token_ids in zip(table[len(cached):], chunks[len(cached):]):
            if len(token_ids) < size:
                break
            h = self.compute_hash(token_ids, h, extra_keys)
            self.blocks[block_id].hash, self.blocks[block_id].token_ids = h, token_ids
            self.hash_to_block_id[h] = block_id
        self.tables[request_id] = table
        return table, len(cached) * size

    def _allocate_block(self):
        block_id = self.free_block_ids.popleft()
        block = self.blocks[block_id]
        if block.hash != -1 and self.hash_to_block_id.get(block.hash) == block_id:
            del self.hash_to_block_id[block.hash]
        block.ref_count, block.hash, block.token_ids = 1, -1, []
        self.used_block_ids.add(block_id)
        return block_id

    def free(self, request_id):
        for block_id in reversed(self.tables.pop(request_id)):
            block = self.blocks[block_id]
            block.ref_count -= 1
            if block.ref_count == 0:
                self.used_block_ids.remove(block_id)
                self.free_block_ids.append(block_id)

    def block_hash(self, block):
        if not 0 <= block < len(self.blocks):   # the interface's range check, not nano-vllm's
            raise ValueError(f"block {block} is out of range")
        return None if self.blocks[block].hash == -1 else self.blocks[block].hash

    def refcount(self, block):
        if not 0 <= block < len(self.blocks):
            raise ValueError(f"block {block} is out of range")
        return self.blocks[block].ref_count

    def free_count(self):
        return len(self.free_block_ids)
