#!/usr/bin/env python3
"""Writes the planner's trace suite (bench/workloads/*.json, fhr-workload/1).

Every workload is built from the CKKS sizes the project designs with
(docs/planner.md, "Trace suite", lists them with what each exercises):

  ciphertext at level l   2 (l+1) 8N bytes     plaintext at level l   (l+1) 8N
  switching key           dnum 2 (L+1+alpha) 8N          (N = 2^16: 120 MiB)
  FHElium's logN 16 bootstrap: 35 Q + 4 P primes, 256 MiB keys, 35 MiB ciphertexts

Deterministic: the same script writes the same bytes (fixed seeds, sorted
output). Run from the repository root:  python3 scripts/gen-workloads.py
"""
import json
import os
import random
import sys

MiB = 1 << 20
GiB = 1 << 30
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "bench", "workloads")


def limb(log_n):
    return 8 * (1 << log_n)


def ciphertext(level, log_n):
    return 2 * (level + 1) * limb(log_n)


def plaintext(level, log_n):
    return (level + 1) * limb(log_n)


def switching_key(log_n, primes=30, alpha=10, dnum=3):
    return dnum * 2 * (primes + alpha) * limb(log_n)


class Workload:
    def __init__(self, name, devices=1):
        self.name = name
        self.devices = devices
        self.budgets = []
        self.tiers = []
        self.values = []
        self.steps = []

    def budget(self, at, nbytes):
        self.budgets.append({"at": at, "bytes": int(nbytes)})

    def tier(self, source, *to):
        self.tiers.append({"from": source, "to": list(to)})

    def family(self, name, count, nbytes, mode, **where):
        self.values.append(dict(name=name, count=count, bytes=int(nbytes), mode=mode, **where))

    def value(self, name, nbytes, mode, **where):
        self.values.append(dict(name=name, bytes=int(nbytes), mode=mode, **where))

    def step(self, name, needs, workspace=(), compute=None):
        step = {"name": name, "needs": []}
        by_location = {}
        for value, at in needs:
            if (value, at) in [(v, a) for a, vs in by_location.items() for v in vs]:
                continue
            by_location.setdefault(at, []).append(value)
        step["needs"] = [{"at": at, "values": values} for at, values in by_location.items()]
        if workspace:
            step["workspace"] = [{"at": at, "bytes": int(n), "label": label} for at, n, label in workspace]
        if compute is not None:
            step["compute_seconds"] = round(compute, 9)
        self.steps.append(step)

    def write(self):
        doc = {"schema": "fhr-workload/1", "name": self.name, "devices": self.devices, "budgets": self.budgets}
        if self.tiers:
            doc["tiers"] = self.tiers
        doc["values"] = self.values
        doc["steps"] = self.steps
        path = os.path.join(OUT, self.name + ".json")
        with open(path, "w") as f:
            head = json.dumps({k: v for k, v in doc.items() if k != "steps"}, indent=1)[:-2]
            f.write(head + ',\n "steps": [\n')
            f.write(",\n".join("  " + json.dumps(s, separators=(", ", ": ")) for s in doc["steps"]))
            f.write("\n ]\n}\n")
        return path


# ---- bootstrapping ---------------------------------------------------------

def bootstrap_keys(levels, baby, giant):
    """Key-switch order of one bootstrap: CoeffToSlot levels (baby steps
    hoisted, then giant steps), EvalMod (relinearisations, a conjugation),
    SlotToCoeff levels reusing the CoeffToSlot keys in reverse."""
    per_level = baby + giant
    order = []
    for level in range(levels):
        keys = [f"rk[{level * per_level + i}]" for i in range(per_level)]
        order += keys[:baby]            # baby steps (hoisted)
        order += keys[baby:]            # giant steps
    order += ["conj"]
    order += ["relin"] * 12              # EvalMod: polynomial evaluation
    order += ["conj"]
    order += ["relin"] * 4               # double-angle steps
    for level in reversed(range(levels)):
        keys = [f"rk[{level * per_level + i}]" for i in range(per_level)]
        order += keys[:baby]
        order += keys[baby:]
    return order


def bootstrapping(name, log_n, key_bytes, ct_bytes, levels, baby, giant, budget, repeats, compute_ms,
                  key_source="pinned", workspace_factor=3, seed=1):
    rng = random.Random(seed)
    w = Workload(name)
    w.budget("cuda:0", budget)
    w.budget("pinned", 64 * GiB)
    w.tier("cuda:0", "pinned", "pageable")
    keys = levels * (baby + giant)
    w.family("rk", keys, key_bytes, "replicable", source=key_source)
    w.value("conj", key_bytes, "replicable", source=key_source)
    w.value("relin", key_bytes, "replicable", source=key_source)
    w.value("ct", ct_bytes, "exclusive", at="pinned")
    order = []
    for r in range(repeats):
        order += bootstrap_keys(levels, baby, giant)
        # Between bootstraps, a few multiplications of the circuit.
        order += ["relin"] * rng.randint(2, 6)
    for i, key in enumerate(order):
        jitter = 1.0 + 0.1 * (rng.random() - 0.5)
        w.step(f"ks-{i}/{key}", [(key, "cuda:0"), ("ct", "cuda:0")],
               [("cuda:0", workspace_factor * ct_bytes, "key-switch")], compute_ms * 1e-3 * jitter)
    return w


def hoisted_rotations(name, log_n, rotations, budget, ciphertexts, compute_ms, key_source="pinned"):
    """A linear transform with hoisted rotations over several ciphertexts:
    the decomposition of each ciphertext is held while every rotation key
    is applied to it."""
    key_bytes = switching_key(log_n)
    ct_bytes = ciphertext(29, log_n)
    w = Workload(name)
    w.budget("cuda:0", budget)
    w.budget("pinned", 64 * GiB)
    w.tier("cuda:0", "pinned", "pageable")
    w.family("rk", rotations, key_bytes, "replicable", source=key_source)
    w.family("ct", ciphertexts, ct_bytes, "exclusive", at="pageable")
    step = 0
    for c in range(ciphertexts):
        # Alternate directions: the keys a ciphertext ends with start the next.
        keys = list(range(rotations)) if c % 2 == 0 else list(reversed(range(rotations)))
        for k in keys:
            w.step(f"ct{c}/rot-{k}", [(f"rk[{k}]", "cuda:0"), (f"ct[{c}]", "cuda:0")],
                   [("cuda:0", 3 * ct_bytes, "hoisted decomposition")], compute_ms * 1e-3)
            step += 1
    return w


# ---- ResNet-20-style inference -------------------------------------------

def resnet(name, log_n, budget, passes, gpus=1, weights_per_layer=9, compute_ms=2.0, seed=7):
    """ResNet-20: 19 convolutions and a dense layer. Each convolution
    multiplies by plaintext diagonals (their size falls with the level) and
    rotates with a few keys; the activations are ciphertexts that stay on
    their GPU. Every pass streams every layer's weights; several passes
    (images) reuse them. On two GPUs each takes every other image and needs
    its own copy of the weights and keys."""
    rng = random.Random(seed)
    layers = 20
    top_level = 29
    w = Workload(name, devices=gpus)
    for g in range(gpus):
        w.budget(f"cuda:{g}", budget)
    w.budget("pinned", 64 * GiB)
    for g in range(gpus):
        w.tier(f"cuda:{g}", "pinned", "pageable")
    # Weights: per layer, diagonals at that layer's level.
    for layer in range(layers):
        level = top_level - (layer * 20) // layers
        w.family(f"w{layer}", weights_per_layer, plaintext(level, log_n), "replicable", source="pinned")
    w.family("rk", 8, switching_key(log_n), "replicable", source="pinned")
    w.value("relin", switching_key(log_n), "replicable", source="pinned")
    for g in range(gpus):
        w.value(f"act{g}", ciphertext(top_level, log_n), "exclusive", at="pinned")
    for p in range(passes):
        g = p % gpus
        gpu = f"cuda:{g}"
        for layer in range(layers):
            rotations = rng.sample(range(8), 3)
            for d in range(weights_per_layer):
                needs = [(f"w{layer}[{d}]", gpu), (f"act{g}", gpu)]
                if d % 3 == 2:
                    needs.append((f"rk[{rotations[d // 3]}]", gpu))
                w.step(f"img{p}/conv{layer}/diag{d}", needs,
                       [(gpu, 2 * ciphertext(top_level, log_n), "accumulator")], compute_ms * 1e-3)
            w.step(f"img{p}/conv{layer}/relu", [("relin", gpu), (f"act{g}", gpu)],
                   [(gpu, 3 * ciphertext(top_level, log_n), "activation polynomial")], 4 * compute_ms * 1e-3)
    return w


# ---- transformer layers with plaintext weights ----------------------------

def transformer(name, log_n, budget, layers, tokens, heads=4, compute_ms=1.5, seed=11):
    """Transformer layers with plaintext weights: per layer the Q, K, V and
    output projections and two MLP matrices, each a family of diagonals,
    applied to every token block; attention scores use rotation keys."""
    rng = random.Random(seed)
    w = Workload(name)
    w.budget("cuda:0", budget)
    w.budget("pinned", 64 * GiB)
    w.tier("cuda:0", "pinned", "pageable")
    matrices = ["q", "k", "v", "o", "up", "down"]
    diagonals = {"q": 4, "k": 4, "v": 4, "o": 4, "up": 8, "down": 8}
    for layer in range(layers):
        level = 24 - 3 * layer
        for m in matrices:
            w.family(f"l{layer}{m}", diagonals[m], plaintext(level, log_n), "replicable", source="pageable")
    w.family("rk", heads * 2, switching_key(log_n), "replicable", source="pinned")
    w.value("relin", switching_key(log_n), "replicable", source="pinned")
    w.family("tok", tokens, ciphertext(24, log_n), "exclusive", at="pinned")
    for layer in range(layers):
        for t in range(tokens):
            for m in matrices:
                for d in range(diagonals[m]):
                    w.step(f"l{layer}/tok{t}/{m}{d}", [(f"l{layer}{m}[{d}]", "cuda:0"), (f"tok[{t}]", "cuda:0")],
                           [("cuda:0", 2 * ciphertext(24, log_n), "accumulator")], compute_ms * 1e-3)
            for h in range(heads):
                key = rng.randrange(heads * 2)
                w.step(f"l{layer}/tok{t}/attn{h}", [(f"rk[{key}]", "cuda:0"), ("relin", "cuda:0"),
                                                      (f"tok[{t}]", "cuda:0")],
                       [("cuda:0", 3 * ciphertext(24, log_n), "scores")], 2 * compute_ms * 1e-3)
    return w


# ---- ciphertexts of mixed sizes, moved in and out -------------------------

def mixed_levels(name, log_n, budget, ciphertexts, rounds, pinned_budget, seed=5):
    """A batch of ciphertexts at different levels (sizes) processed round
    robin with a relinearisation key: the ciphertexts are must-preserve
    values that spill to pinned memory (or pageable) between their turns."""
    rng = random.Random(seed)
    w = Workload(name)
    w.budget("cuda:0", budget)
    w.budget("pinned", pinned_budget)
    w.tier("cuda:0", "pinned", "pageable")
    w.value("relin", switching_key(log_n), "replicable", source="pinned")
    w.family("rk", 4, switching_key(log_n), "replicable", source="pinned")
    for c in range(ciphertexts):
        w.value(f"c{c}", ciphertext(rng.choice([9, 14, 19, 24, 29]), log_n), "exclusive", at="pageable")
    for r in range(rounds):
        order = list(range(ciphertexts))
        rng.shuffle(order)
        for c in order:
            key = f"rk[{rng.randrange(4)}]"
            w.step(f"r{r}/c{c}/mul", [(f"c{c}", "cuda:0"), ("relin", "cuda:0")],
                   [("cuda:0", 2 * MiB * 10, "tensor")], 2.5e-3)
            w.step(f"r{r}/c{c}/rot", [(f"c{c}", "cuda:0"), (key, "cuda:0")], [], 2.0e-3)
    return w


def gib(x):
    return int(x * GiB)


def suite():
    out = []
    fhelium_key, fhelium_ct = 256 * MiB, 35 * MiB
    # FHElium-like logN 16: 28 rotation keys + conjugation + relinearisation, 256 MiB each.
    for budget_gib in (3, 2, 4.5, 8):
        out.append(bootstrapping(f"boot16-fhelium-30keys-{budget_gib}g".replace(".", "p"), 16, fhelium_key,
                                 fhelium_ct, 4, 5, 2, gib(budget_gib) + 4 * fhelium_ct, 3, 3.9))
    out.append(bootstrapping("boot16-fhelium-30keys-3g-pageable", 16, fhelium_key, fhelium_ct, 4, 5, 2,
                             gib(3) + 4 * fhelium_ct, 3, 3.9, key_source="pageable"))
    # FHE-SIZES logN 16: 120 MiB keys, ~48 rotation keys.
    k16, c16 = switching_key(16), ciphertext(9, 16)
    for budget_gib in (1.5, 2, 3):
        out.append(bootstrapping(f"boot16-48keys-{budget_gib}g".replace(".", "p"), 16, k16, c16, 4, 8, 4,
                                 gib(budget_gib), 2, 2.5))
    out.append(bootstrapping("boot16-24keys-1g", 16, k16, c16, 3, 5, 3, gib(1), 4, 2.5))
    # logN 17: every size doubles.
    k17, c17 = switching_key(17), ciphertext(9, 17)
    for budget_gib in (3, 4, 6):
        out.append(bootstrapping(f"boot17-48keys-{budget_gib}g", 17, k17, c17, 4, 8, 4, gib(budget_gib), 2, 6.0))
    out.append(bootstrapping("boot17-32keys-2g", 17, k17, c17, 4, 5, 3, gib(2), 3, 6.0, key_source="pageable"))
    # Hoisted rotations.
    for rotations, budget_gib in ((32, 1.5), (64, 3), (64, 6)):
        out.append(hoisted_rotations(f"hoisted-{rotations}rot-{budget_gib}g".replace(".", "p"), 16, rotations,
                                     gib(budget_gib), 4, 1.2))
    # ResNet-20 inference, one and two GPUs.
    for budget_gib, passes in ((1, 2), (2, 2), (3, 3), (1.5, 4)):
        out.append(resnet(f"resnet20-1gpu-{budget_gib}g-{passes}img".replace(".", "p"), 16, gib(budget_gib), passes))
    for budget_gib, passes in ((1, 4), (2, 4)):
        out.append(resnet(f"resnet20-2gpu-{budget_gib}g-{passes}img", 16, gib(budget_gib), passes, gpus=2))
    out.append(resnet("resnet20-1gpu-1p5g-2img-logn17", 17, gib(1.5), 2, weights_per_layer=6))
    # Transformer layers with plaintext weights.
    for budget_gib, layers, tokens in ((1, 2, 3), (2, 2, 3), (1.5, 3, 2), (3, 2, 4)):
        out.append(transformer(f"transformer-{layers}layers-{tokens}tok-{budget_gib}g".replace(".", "p"), 16,
                               gib(budget_gib), layers, tokens))
    # Mixed ciphertext sizes per level.
    for budget_gib, pinned_gib, cts in ((0.75, 0.25, 12), (1, 2, 16), (0.5, 0.5, 8)):
        out.append(mixed_levels(f"mixed-levels-{cts}ct-{budget_gib}g".replace(".", "p"), 16, gib(budget_gib), cts, 4,
                                gib(pinned_gib)))
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith(".json"):
            os.remove(os.path.join(OUT, old))
    workloads = suite()
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        sys.exit("duplicate workload names")
    for w in workloads:
        w.write()
    print(f"wrote {len(workloads)} workloads to {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
