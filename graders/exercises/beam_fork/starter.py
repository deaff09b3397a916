"""q46: block tables for beam search over a reference-counted block pool. Fill in the
methods; `grader show beam-fork` prints the full task.
Check with: grader check beam-fork this_file.py"""


class BlockTables:
    def __init__(self, num_blocks, block_size, window_blocks):
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.window_blocks = window_blocks   # None, or a sliding window of this many blocks

    def start(self, seq_id, num_tokens):
        raise NotImplementedError("start: a new sequence and the blocks its prompt fills")

    def fork(self, parent_id, child_id):
        raise NotImplementedError("fork: the child shares every block the parent reads")

    def append(self, seq_id):
        raise NotImplementedError("append: None, or (source, destination) to copy first")

    def free(self, seq_id):
        raise NotImplementedError("free: drop the sequence's references")

    def block_table(self, seq_id):
        raise NotImplementedError("block_table: the blocks the sequence reads, oldest first")

    def free_count(self):
        raise NotImplementedError("free_count")
