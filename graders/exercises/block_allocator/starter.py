"""q43: a reference-counted KV block pool. Fill in the methods; `grader show block-allocator`
prints the full task. Check with: grader check block-allocator this_file.py"""


class BlockAllocator:
    def __init__(self, num_blocks):
        self.num_blocks = num_blocks

    def allocate(self):
        raise NotImplementedError("allocate: return a free block id")

    def fork(self, block_table):
        raise NotImplementedError("fork: add one reference per distinct block")

    def free(self, block):
        raise NotImplementedError("free: drop one reference")

    def copy_on_write(self, block):
        raise NotImplementedError("copy_on_write: return (block to write, copy or None)")

    def refcount(self, block):
        raise NotImplementedError("refcount")

    def free_count(self):
        raise NotImplementedError("free_count")
