"""Reduced-precision CNN inference (``policies/cnn.py`` ``dtype``) against float32 on real Pong.

Frames: EnvPool ``Pong-v5`` (8 envs, seed 0) stepped with seeded random actions for 200 steps;
every 5th step from step 40 on (the ball and both paddles in play) gives 8 frame stacks
``(4, 84, 84)`` uint8, 256 in all, of which a seeded 32 are used. Networks: 16 individuals
from ``CNNPolicy.init_params`` (seed 0). The reference is float32 on the CPU (on CUDA a
float32 conv may run in TF32, so a CUDA "float32" would not be a float32 reference).

Agreement is counted over all ``16 x 32`` (individual, frame) decisions. A random-init
network has near-ties, and reduced precision may flip those; what must hold is that it flips
little (the 99% criterion of issue 7) and only near-ties. Measured on these frames over init
seeds 0-39 (CPU, torch 2.13): bfloat16 agreement 0.992-1.000 (mean 0.9975), every
disagreement with a float32 top-two margin below 1.5% of the frame's largest |logit|;
float16 (on the CPU, as a stand-in for CUDA) 0.994-1.000, margins below 0.08%. With 8
individuals x 64 frames instead, bfloat16 dipped to 0.980 for 2 of 20 seeds: one individual
sitting near a decision boundary on many similar frames dominates a small population.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import policies
from policies import ActionSpec

DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
# float16 convs on the CPU are slow and not the use case; the brief's CPU target is bfloat16
CASES = [(d, t) for d in DEVICES for t in ("bfloat16", "float16") if (d, t) != ("cpu", "float16")]
# largest float32 top-two margin (fraction of max |logit|) a flipped decision may have: about
# 3x the largest measured (see the module docstring)
TIE = {"bfloat16": 0.05, "float16": 0.005}
P, B = 16, 32


@pytest.fixture(scope="module")
def pong():
    import envpool

    env = envpool.make("Pong-v5", env_type="gymnasium", num_envs=8, seed=0)
    try:
        action = ActionSpec.from_space(env.action_space)
        obs, _ = env.reset()
        rng = np.random.default_rng(0)
        stacks = []
        for t in range(200):
            obs, *_ = env.step(rng.integers(0, action.n, size=8))
            if t >= 40 and t % 5 == 4:
                stacks.append(obs.copy())
    finally:
        env.close()
    stacks = np.concatenate(stacks)
    frames = torch.from_numpy(stacks[np.random.default_rng(1).choice(len(stacks), B, False)])
    ref = policies.make("cnn", frames.shape[1:], action)
    rng = np.random.default_rng(0)
    params = torch.tensor(np.stack([ref.init_params(rng) for _ in range(P)]),
                          dtype=torch.float32)
    obs = frames[None].expand(P, *frames.shape)
    with torch.no_grad():
        logits, _ = ref.forward(params, obs)
    return action, frames, params, obs, logits


def test_frames_are_real_pong_in_play(pong):
    action, frames, _, _, logits = pong
    assert action.discrete and action.n == 6
    assert frames.shape == (B, 4, 84, 84) and frames.dtype == torch.uint8
    flat = frames.reshape(B, -1).numpy()
    assert len(np.unique(flat, axis=0)) == B  # distinct stacks
    # the four frames of a stack differ (things move), and the pixels are not one colour
    assert all((frames[i, 0] != frames[i, 3]).any() for i in range(B))
    assert (flat.std(axis=1) > 1).all()
    # the reference networks disagree with each other (so agreement below is not trivial)
    actions = logits.argmax(-1)
    assert len(torch.unique(actions)) >= 3


@pytest.mark.parametrize("device,dtype", CASES)
def test_reduced_precision_agrees_with_float32(pong, device, dtype):
    action, _, params, obs, logits = pong
    policy = policies.make("cnn", obs.shape[2:], action, dtype=dtype)
    with torch.no_grad():
        y, _ = policy.forward(params.to(device), obs.to(device))
    assert y.dtype == torch.float32 and y.shape == logits.shape
    y = y.cpu()
    actions = policy.to_action(y)  # what act() returns
    ref = logits.argmax(-1)
    agree = (actions == ref).float().mean().item()
    assert agree >= 0.99, agree
    # every flipped decision was a near-tie in float32
    top2 = logits.topk(2, dim=-1).values
    margin = (top2[..., 0] - top2[..., 1]) / logits.abs().amax(-1)
    flipped = actions != ref
    assert (margin[flipped] < TIE[dtype]).all(), margin[flipped]
    # and the outputs are close where nothing is close to a tie
    err = (y - logits).abs().amax(-1) / logits.abs().amax(-1)
    assert err.median() < TIE[dtype], err.median()
