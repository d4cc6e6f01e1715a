"""The policy server's sampler: continuous batching over a KV cache.

One thread owns the model. HTTP handler threads hand it requests and wait; it
admits each request into a free slot of a policy.KVCache (one forward over
the prompt), then samples one token for every active slot per step (one
batched forward over the newest tokens), and answers a request as soon as it
ends (END sampled or its room used up). So the harness's concurrent attempts
are decoded together, as a vLLM engine does.

A completion's log-probabilities are the ones it was sampled with, taken at
temperature 1 (the model's own distribution, as vLLM reports them): the same
numbers the trainer's full forward computes up to float32 rounding, which the
trainer checks (trainer.py check-logprobs). A request with a fixed completion
(the scripted teacher) is scored by policy.token_logprobs.

New weights (`swap`) take effect between calls: admission stops, the active
completions finish with the weights they started with, then the swap."""
import queue
import threading

import torch

import policy


class Request:
    """One completion: prompt ids, at most `room` new tokens, the temperature
    (<= 0: greedy), the number of alternatives per token to report, and, for
    the teacher, the completion itself. The engine fills in the answer."""

    def __init__(self, prompt, room, temperature, top=0, fixed=None):
        self.prompt, self.room, self.temperature, self.top, self.fixed = prompt, room, temperature, top, fixed
        self.completion, self.logprobs, self.alternatives = [], [], []
        self.error = None
        self.done = threading.Event()


class Swap:
    def __init__(self, model):
        self.model = model
        self.done = threading.Event()


class Engine:
    def __init__(self, model, generator, slots=8):
        self.model, self.generator, self.slots = model, generator, slots
        self.cache = policy.KVCache(model, slots)
        self.inbox = queue.Queue()
        self.active = {}  # slot -> Request being decoded
        threading.Thread(target=self.run, name="engine", daemon=True).start()

    # --- called from handler threads ---------------------------------------
    def generate(self, request):
        """Blocks until the request is answered; raises what the engine hit."""
        self.inbox.put(request)
        request.done.wait()
        if request.error is not None:
            raise request.error
        return request

    def swap(self, model):
        item = Swap(model)
        self.inbox.put(item)
        item.done.wait()

    # --- the engine thread ---------------------------------------------------
    def run(self):
        held = None  # a swap waiting for the active completions to end
        while True:
            while held is None and len(self.active) < self.slots:
                try:
                    item = self.inbox.get(block=not self.active)
                except queue.Empty:
                    break
                if isinstance(item, Swap):
                    held = item
                else:
                    self.admit(item)
            if held is not None and not self.active:
                self.model, self.cache = held.model, policy.KVCache(held.model, self.slots)
                held.done.set()
                held = None
            elif self.active:
                self.step()

    def admit(self, request):
        try:
            with torch.no_grad():
                if request.fixed is not None:
                    self.score_fixed(request)
                    return
                slot = next(s for s in range(self.slots) if s not in self.active)
                logits = self.cache.prefill(slot, request.prompt).unsqueeze(0)
                self.active[slot] = request
                self.sample([slot], logits)
        except Exception as e:  # a request's failure is its own; the engine goes on
            self.drop([s for s, r in self.active.items() if r is request], e)
            if not request.done.is_set():
                self.finish(request, e)

    def step(self):
        slots = sorted(self.active)
        try:
            with torch.no_grad():
                logits = self.cache.decode(slots, [self.active[s].completion[-1] for s in slots])
                self.sample(slots, logits)
        except Exception as e:
            self.drop([s for s in slots if s in self.active], e)

    def sample(self, slots, logits):
        """Draws the next token of each slot from logits [len(slots), V]; ends the finished."""
        requests = [self.active[s] for s in slots]
        logp = policy.masked_log_softmax(logits)
        temperature = torch.tensor([max(r.temperature, 1e-6) for r in requests]).unsqueeze(1)
        probs = policy.masked_log_softmax(logits / temperature).exp()
        drawn = torch.multinomial(probs, 1, generator=self.generator).squeeze(1)
        greedy = torch.tensor([r.temperature <= 0 for r in requests])
        tokens = torch.where(greedy, logp.argmax(-1), drawn)
        for i, (slot, r) in enumerate(zip(slots, requests)):
            token = int(tokens[i])
            r.completion.append(token)
            r.logprobs.append(float(logp[i, token]))
            if r.top:
                best = logp[i].topk(r.top)
                r.alternatives.append(list(zip(best.indices.tolist(), best.values.tolist())))
            if token == policy.END or len(r.completion) >= r.room:
                self.finish(self.active.pop(slot), None)

    def score_fixed(self, request):
        ids = request.prompt + request.fixed
        request.completion = list(request.fixed)
        request.logprobs = policy.token_logprobs(self.model, [ids])[0, len(request.prompt):].tolist()
        if request.top:
            full = policy.masked_log_softmax(self.model(torch.as_tensor([ids])))[0]
            best = full[len(request.prompt) - 1:-1].topk(request.top, dim=-1)
            request.alternatives = [list(zip(i, v)) for i, v in zip(best.indices.tolist(), best.values.tolist())]
        self.finish(request, None)

    def drop(self, slots, error):
        for s in slots:
            self.finish(self.active.pop(s), error)

    @staticmethod
    def finish(request, error):
        request.error = error
        request.done.set()
