"""Where a BipedalWalker solution's return goes: forward progress against torque cost.

    python -m islands.output.walker_torque RUN_DIR [--episodes 5] [--seed 0]

Replays ``RUN_DIR/solution.npz`` in Gymnasium's BipedalWalker-v3 (its frozen observation
statistics, as the test does) and splits each episode's return. BipedalWalker charges
``0.00035 * MOTORS_TORQUE * |a|`` per motor and step (``gymnasium.envs.box2d.
bipedal_walker``); the rest of the return is the hull's forward progress less its angle
shaping. A walker that finishes the course earns ~350 before the torque cost, so a return
above 300 needs a torque cost below ~55 -- proportional control, not bang-bang.

Per episode: return, steps, torque cost, mean |action|, the share of actions beyond 0.95
(saturated tanh). Then the genome's norm and largest weight and, for a linear policy
(``hidden=()``), the median |pre-activation| per output: well above 1 means tanh is flat
there, so the return no longer depends on the weights' scale. Table, then one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys

import numpy as np


def episode(env, ctrl, seed: int) -> tuple[dict, np.ndarray]:
    """One episode: its split return, and the normalized observations it saw."""
    from gymnasium.envs.box2d.bipedal_walker import MOTORS_TORQUE

    obs, _ = env.reset(seed=seed)
    ctrl.reset()
    total, torque, steps, done, acts, seen = 0.0, 0.0, 0, False, [], []
    while not done:
        a = ctrl(obs)
        acts.append(np.abs(a))
        seen.append(ctrl.normalized(obs))
        obs, r, term, trunc, _ = env.step(a)
        total += float(r)
        torque += 0.00035 * MOTORS_TORQUE * float(np.clip(np.abs(a), 0, 1).sum())
        steps += 1
        done = term or trunc
    acts = np.array(acts)
    return {"return": total, "steps": steps, "torque_cost": torque,
            "mean_abs_action": float(acts.mean()),
            "saturated": float((acts > 0.95).mean())}, np.array(seen)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m islands.output.walker_torque",
                                description=__doc__.split("\n")[0])
    p.add_argument("run_dir", metavar="RUN_DIR")
    p.add_argument("--episodes", type=int, default=5)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    import gymnasium

    from ..evaluate import Controller
    from ..persistence.solution import load_solution

    try:
        sol = load_solution(args.run_dir)
    except (FileNotFoundError, ValueError) as e:
        print(f"islands.output.walker_torque: {e}", file=sys.stderr)
        return 2
    if sol["env"]["env_id"] != "BipedalWalker-v3" or not sol["env"].get("obs_norm"):
        print("islands.output.walker_torque: needs a BipedalWalker-v3 solution trained with "
              "obs_norm", file=sys.stderr)
        return 2
    env, ctrl = gymnasium.make("BipedalWalker-v3"), Controller(sol)
    rows, seen = [], []
    print(f"{'episode':>7} {'return':>8} {'steps':>6} {'torque':>7} {'mean|a|':>8} {'sat':>5}")
    for k in range(args.episodes):
        row, x = episode(env, ctrl, args.seed + k)
        rows.append(row)
        seen.append(x)
        print(f"{k:7d} {row['return']:8.1f} {row['steps']:6d} {row['torque_cost']:7.1f} "
              f"{row['mean_abs_action']:8.2f} {row['saturated']:5.2f}")
    w = np.asarray(sol["params"], dtype=np.float64)
    out = {"benchmark": "walker_torque", "run_dir": args.run_dir, "episodes": rows,
           "weights_norm": float(np.linalg.norm(w)), "weights_max": float(np.abs(w).max())}
    if not sol["policy"]["options"].get("hidden"):  # linear: [W (24 x 4); b], row-major
        n_in, n_out = int(np.prod(sol["policy"]["obs_shape"])), 4
        y = np.concatenate(seen) @ w[:-n_out].reshape(n_in, n_out) + w[-n_out:]
        out["median_abs_preactivation"] = np.median(np.abs(y), axis=0).round(2).tolist()
    print(f"weights: norm {out['weights_norm']:.2f}, largest {out['weights_max']:.2f}; "
          f"median |pre-activation| {out.get('median_abs_preactivation', '-')}")
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
