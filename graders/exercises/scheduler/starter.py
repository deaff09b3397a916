"""q44: a continuous-batching scheduler. Fill in the methods; `grader show scheduler` prints
the full task. Check with: grader check scheduler this_file.py"""


class Scheduler:
    def __init__(self, token_budget, max_seqs, num_blocks, block_size, preemption):
        self.token_budget = token_budget
        self.max_seqs = max_seqs
        self.num_blocks = num_blocks
        self.block_size = block_size
        self.preemption = preemption  # "recompute" or "swap"

    def add_request(self, request_id, prompt_len, max_tokens):
        raise NotImplementedError("add_request: the request joins the waiting queue")

    def schedule(self):
        raise NotImplementedError("schedule: return {'prefill': [[id, n], ...], "
                                  "'decode': [id, ...], 'preempted': [id, ...]}")

    def update(self, eos):
        raise NotImplementedError("update: sample, finish, return the finished ids sorted")

    def queues(self):
        raise NotImplementedError("queues: return {'waiting': [...], 'running': [...], "
                                  "'swapped': [...]}")
