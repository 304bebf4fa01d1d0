"""The PyTorch models of the issue-15 services (random weights, fixed batch).

Each builder returns `step`: `step()` runs one unit of GPU work (an
inference batch, or a training step) and returns without synchronising; the
caller times it. The sizes are chosen so that the GPU, not Python, bounds a
step on an H200 (every model runs in fp16/bf16 with batches of tens; the BE
batch-inference kinds with 128). `llama` is one forward pass of a small
Llama-style decoder (8 layers, hidden 1024) over 8 sequences of 128 tokens
without a KV cache: a prefill-sized decoder step, not a one-token decode."""
import torch


def _resnet(name, batch, train):
    import torchvision
    model = getattr(torchvision.models, name)(weights=None).cuda()
    model = model.to(memory_format=torch.channels_last)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    if not train:
        model = model.half().eval()
        x = x.half()

        def step():
            with torch.inference_mode():
                model(x)
        return step
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = torch.nn.CrossEntropyLoss()

    def step():
        with torch.autocast("cuda", dtype=torch.float16):
            loss = loss_fn(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
    return step


def _bert(batch, seq, train):
    from transformers import BertConfig, BertModel
    model = BertModel(BertConfig()).cuda()
    ids = torch.randint(0, 30522, (batch, seq), device="cuda")
    if not train:
        model = model.half().eval()

        def step():
            with torch.inference_mode():
                model(input_ids=ids)
        return step
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = model(input_ids=ids).last_hidden_state
        out.float().pow(2).mean().backward()
        opt.step()
        opt.zero_grad(set_to_none=True)
    return step


def _llama(batch, seq):
    from transformers import LlamaConfig, LlamaForCausalLM
    cfg = LlamaConfig(hidden_size=1024, intermediate_size=2816, num_hidden_layers=8,
                      num_attention_heads=16, num_key_value_heads=16, vocab_size=32000,
                      max_position_embeddings=2048)
    model = LlamaForCausalLM(cfg).cuda().half().eval()
    ids = torch.randint(0, 32000, (batch, seq), device="cuda")

    def step():
        with torch.inference_mode():
            model(input_ids=ids, use_cache=False)
    return step


# name -> (builder, default batch). The BE inference kinds are batch jobs
# (offline scoring): a large batch, throughput counted in samples/s.
MODELS = {
    # HP services
    "resnet50": (lambda b: _resnet("resnet50", b, False), 32),
    "bert": (lambda b: _bert(b, 128, False), 32),
    "llama": (lambda b: _llama(b, 128), 8),
    # BE jobs: training
    "resnet18_train": (lambda b: _resnet("resnet18", b, True), 64),
    "bert_train": (lambda b: _bert(b, 128, True), 16),
    # BE jobs: batch inference
    "resnet50_infer_be": (lambda b: _resnet("resnet50", b, False), 128),
    "bert_infer_be": (lambda b: _bert(b, 128, False), 128),
}


def batch_of(name, batch=0):
    """The batch a model runs with: the one asked for, else its default."""
    return batch or MODELS[name][1]


def build(name, batch=0):
    if name not in MODELS:
        raise SystemExit(f"unknown model '{name}': use one of {', '.join(sorted(MODELS))}")
    torch.manual_seed(0)
    torch.backends.cudnn.benchmark = False
    return MODELS[name][0](batch_of(name, batch))
