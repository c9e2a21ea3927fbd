"""Snake for N boards at once as torch tensors (CPU or CUDA), fully vectorized.

Rules (``Snake-v0``, default board 10 x 10):

* the snake starts with ``start_length`` (3) cells in a straight line, at a random place and
  heading, with one food item on a random empty cell;
* actions are **relative** to the heading (3 actions): 0 = straight, 1 = turn left,
  2 = turn right. Relative actions cannot reverse into the neck, so every action is legal;
* moving onto the food: reward +1, the snake grows by one (its tail stays this step) and a
  new food item appears on a uniformly chosen empty cell; filling the board ends the
  episode (terminated, a win);
* moving off the board or onto its own body: terminated, reward 0. Moving onto the cell the
  tail leaves in the same step is allowed (the tail moves first), as in classic Snake;
* truncated after ``hunger_limit`` steps without food (default ``H * W``: enough to reach any
  cell, so only circling snakes are cut) or after ``max_episode_steps`` (default 1000).

State (functional API, a tuple of tensors with batch B): ``body (B, H, W)`` int16 where a
cell holds how many more steps that segment stays (head = length, tail = 1, 0 = empty), so
one step is "decrement every cell, write the new head" with no Python loop over snakes;
``head``, ``direction`` (0 up, 1 right, 2 down, 3 left), ``food`` (flat cell index, -1 when
the board is full), ``length``, ``key``, ``hunger``, ``steps``.

Observations (``obs`` option):

* ``"features"`` (default), 11 float32 values, egocentric so a small MLP can learn it:
  danger straight / left / right (wall or a body cell that is still there next step),
  food offset forward and to the right (divided by the board size), heading one-hot (4), head
  row and column scaled to [0, 1];
* ``"board"``: ``(H, W, 3)`` float32 one-hot planes: body (head included), head, food.

Randomness: ``reset(seed)`` / ``initial_states(count, seed)`` draw one 31-bit key per
episode from ``torch.Generator(seed)`` on the CPU. Everything random inside an episode (the
start and every food position) is a counter-based integer hash of ``(key, food eaten so
far)`` computed with int64 tensor ops. Hence (a) CPU and CUDA produce bit-identical
trajectories, (b) every individual of a population that plays episode ``e`` gets the same
food sequence (common random numbers) whatever it does, and (c) a step has no RNG state to
thread through torch.compile. An auto-reset episode gets the hash of the previous key.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from policies.spec import ActionSpec

DEFAULT_SIZE = 10
DEFAULT_START_LENGTH = 3
DEFAULT_MAX_EPISODE_STEPS = 1000
OBS_MODES = ("features", "board")
NUM_FEATURES = 11

_M32 = 0xFFFFFFFF
_SALT_DIR, _SALT_ROW, _SALT_COL, _SALT_NEXT = 0x3C6EF372, 0x1B873593, 0x68E31DA4, 0x5BD1E995

SnakeState = tuple[torch.Tensor, ...]


def _mix32(x: torch.Tensor) -> torch.Tensor:
    """32-bit integer finalizer (the "hash prospector" 0x45d9f3b mix) on int64 tensors
    holding values in [0, 2^32); the products stay below 2^59, so nothing overflows."""
    x = ((x >> 16) ^ x) * 0x45D9F3B & _M32
    x = ((x >> 16) ^ x) * 0x45D9F3B & _M32
    return (x >> 16) ^ x


def _hash(key: torch.Tensor, counter) -> torch.Tensor:
    """Deterministic pseudo-random value in [0, 2^32) for (key, counter), same on any device."""
    return _mix32((_mix32(key & _M32) + (counter & _M32) * 0x2545F491) & _M32)


class TorchSnake:
    """Batched Snake; see the module docstring for the rules, state and observations."""

    env_id = "Snake-v0"
    action = ActionSpec(discrete=True, n=3)  # straight, left, right (relative to heading)
    default_max_episode_steps = DEFAULT_MAX_EPISODE_STEPS

    def __init__(
        self,
        num_envs: int = 1,
        device: str | torch.device = "cpu",
        seed: int = 0,
        max_episode_steps: int | None = None,
        size: int | Sequence[int] = DEFAULT_SIZE,
        start_length: int = DEFAULT_START_LENGTH,
        hunger_limit: int | None = None,
        obs: str = "features",
    ) -> None:
        H, W = (int(size), int(size)) if isinstance(size, int) else (int(size[0]), int(size[1]))
        if H < 2 or W < 2:
            raise ValueError(f"board must be at least 2 x 2, got {H} x {W}")
        if not 1 <= int(start_length) <= min(H, W) or int(start_length) >= H * W:
            raise ValueError(
                f"start_length must be in [1, {min(H, W)}] and below {H * W} cells, "
                f"got {start_length}"
            )
        if obs not in OBS_MODES:
            raise ValueError(f"obs must be one of {OBS_MODES}, got {obs!r}")
        if int(num_envs) < 1:
            raise ValueError(f"num_envs must be >= 1, got {num_envs}")
        self.num_envs = int(num_envs)
        self.device = torch.device(device)
        self.H, self.W, self.HW = H, W, H * W
        self.start_length = int(start_length)
        self.hunger_limit = int(hunger_limit or H * W)
        self.max_episode_steps = int(max_episode_steps or DEFAULT_MAX_EPISODE_STEPS)
        if self.hunger_limit < 1 or self.max_episode_steps < 1:
            raise ValueError("hunger_limit and max_episode_steps must be >= 1")
        self.obs_mode = obs
        self.obs_shape = (NUM_FEATURES,) if obs == "features" else (H, W, 3)
        self.seed = int(seed)
        dev = self.device
        self._dr = torch.tensor([-1, 0, 1, 0], dtype=torch.int64, device=dev)
        self._dc = torch.tensor([0, 1, 0, -1], dtype=torch.int64, device=dev)
        self._turn = torch.tensor([0, -1, 1], dtype=torch.int64, device=dev)
        self._st: SnakeState | None = None

    # ---- functional API -------------------------------------------------------------------

    def initial_states(self, count: int, seed: int) -> SnakeState:
        """``count`` episode starts, one key each from ``torch.Generator(seed)`` on the CPU."""
        g = torch.Generator(device="cpu").manual_seed(int(seed) % (2**63))
        keys = torch.randint(0, 2**31 - 1, (int(count),), generator=g, dtype=torch.int64)
        return self.spawn(keys.to(self.device))

    def spawn(self, key: torch.Tensor) -> SnakeState:
        """Fresh episodes for int64 ``key (B,)``: a straight snake of ``start_length`` cells
        placed so that it fits on the board, heading away from its tail, plus one food."""
        H, W, L = self.H, self.W, self.start_length
        B = key.shape[0]
        d = _hash(key, _SALT_DIR) % 4
        fr, fc = self._dr[d], self._dc[d]
        # the body runs from the head backwards: head - k * heading for k = 0..L-1
        lo_r, hi_r = ((L - 1) * fr).clamp(min=0), H - 1 + ((L - 1) * fr).clamp(max=0)
        lo_c, hi_c = ((L - 1) * fc).clamp(min=0), W - 1 + ((L - 1) * fc).clamp(max=0)
        r = lo_r + _hash(key, _SALT_ROW) % (hi_r - lo_r + 1)
        c = lo_c + _hash(key, _SALT_COL) % (hi_c - lo_c + 1)
        k = torch.arange(L, device=key.device)
        cells = (r[:, None] - k * fr[:, None]) * W + (c[:, None] - k * fc[:, None])
        body = torch.zeros(B, self.HW, dtype=torch.int16, device=key.device)
        body.scatter_(1, cells, (L - k).to(torch.int16).expand(B, L).contiguous())
        length = torch.full((B,), L, dtype=torch.int64, device=key.device)
        food = self._place_food(body, key, length)
        zeros = torch.zeros(B, dtype=torch.int32, device=key.device)
        return (body.view(B, H, W), cells[:, 0].contiguous(), d, food, length, key, zeros, zeros)

    def make_state(
        self, cells: Sequence[tuple[int, int]], direction: int, food: tuple[int, int] | None,
        key: int = 0,
    ) -> SnakeState:
        """One env's state from explicit ``cells`` (head first, each next to the previous),
        ``direction`` (0 up, 1 right, 2 down, 3 left) and ``food`` (row, col), for tests
        and scripted play."""
        H, W = self.H, self.W
        body = torch.zeros(1, self.HW, dtype=torch.int16)
        for i, (r, c) in enumerate(cells):
            if not (0 <= r < H and 0 <= c < W) or body[0, r * W + c] != 0:
                raise ValueError(f"cell {(r, c)} is off the board or repeated")
            body[0, r * W + c] = len(cells) - i
        food_idx = -1 if food is None else food[0] * W + food[1]
        if food is not None and body[0, food_idx] != 0:
            raise ValueError(f"food {food} is on the snake")
        dev = self.device

        def t(v, dt=torch.int64):
            return torch.tensor([v], dtype=dt, device=dev)

        hr, hc = cells[0]
        zeros = torch.zeros(1, dtype=torch.int32, device=dev)
        return (
            body.view(1, H, W).to(dev), t(hr * W + hc), t(direction), t(food_idx),
            t(len(cells)), t(key), zeros, zeros,
        )

    def observe(self, st: SnakeState) -> torch.Tensor:
        """Observations ``(B, *obs_shape)`` float32 (see the module docstring)."""
        body, head, d, food, length, _key, _hunger, _steps = st
        B, H, W = body.shape[0], self.H, self.W
        if self.obs_mode == "board":
            flat = body.reshape(B, self.HW)
            ar = torch.arange(self.HW, device=body.device)
            planes = torch.stack(
                (flat > 0, ar == head[:, None], ar == food[:, None]), dim=-1
            )
            return planes.to(torch.float32).reshape(B, H, W, 3)
        r, c = head // W, head % W
        dirs = torch.stack((d, (d + 3) % 4, (d + 1) % 4), dim=1)  # straight, left, right
        nr, nc = r[:, None] + self._dr[dirs], c[:, None] + self._dc[dirs]
        off = (nr < 0) | (nr >= H) | (nc < 0) | (nc >= W)
        idx = nr.clamp(0, H - 1) * W + nc.clamp(0, W - 1)
        # a cell holding 1 is the tail, which leaves on the next move
        danger = off | (body.reshape(B, self.HW).gather(1, idx) > 1)
        has_food = food >= 0
        dr = torch.where(has_food, food // W - r, 0)
        dc = torch.where(has_food, food % W - c, 0)
        rd = (d + 1) % 4
        scale = float(max(H, W) - 1)
        fwd = (dr * self._dr[d] + dc * self._dc[d]) / scale
        right = (dr * self._dr[rd] + dc * self._dc[rd]) / scale
        heading = torch.nn.functional.one_hot(d, 4)
        pos = torch.stack((r / max(H - 1, 1), c / max(W - 1, 1)), dim=1)
        return torch.cat(
            (danger.to(torch.float32), fwd[:, None].float(), right[:, None].float(),
             heading.float(), pos.float()),
            dim=1,
        )

    def step_state(
        self, st: SnakeState, action: torch.Tensor
    ) -> tuple[SnakeState, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One move of every snake: ``(new_state, reward, terminated, truncated)``; no
        reset. A snake that dies keeps its last board (head not moved)."""
        body, head, d, food, length, key, hunger, steps = st
        B, H, W = body.shape[0], self.H, self.W
        d = (d + self._turn[action]) % 4
        r, c = head // W + self._dr[d], head % W + self._dc[d]
        wall = (r < 0) | (r >= H) | (c < 0) | (c >= W)
        nhead = r.clamp(0, H - 1) * W + c.clamp(0, W - 1)
        flat = body.reshape(B, self.HW)
        cell = flat.gather(1, nhead[:, None]).squeeze(1)
        ate = (nhead == food) & ~wall
        # the food cell is never body; a non-eating move frees the tail (value 1) first
        dead = wall | (cell > 1)
        new_length = length + ate.to(length.dtype)
        keep = (ate | dead)[:, None]
        flat = torch.where(keep, flat, flat - (flat > 0).to(flat.dtype))
        head_val = torch.where(dead, cell, new_length.to(flat.dtype))
        flat = flat.scatter(1, nhead[:, None], head_val[:, None])
        head = torch.where(dead, head, nhead)
        won = ate & (new_length >= self.HW)
        new_food = self._place_food(flat, key, new_length)
        food = torch.where(ate, new_food, food)
        hunger = torch.where(ate, torch.zeros_like(hunger), hunger + 1)
        steps = steps + 1
        terminated = dead | won
        truncated = (hunger >= self.hunger_limit) | (steps >= self.max_episode_steps)
        reward = ate.to(torch.float32)
        new_st = (flat.view(B, H, W), head, d, food, new_length, key, hunger, steps)
        return new_st, reward, terminated, truncated

    def _place_food(self, flat: torch.Tensor, key: torch.Tensor, length: torch.Tensor):
        """Flat index of the k-th empty cell with k = hash(key, length) mod #empty, i.e. a
        uniform empty cell that depends only on the episode and the food eaten so far; -1
        when no cell is empty. Computed for every board (no host sync to pick the eaters)."""
        empty = flat.reshape(flat.shape[0], -1) == 0
        n_empty = (self.HW - length).clamp(min=1)
        k = _hash(key, length) % n_empty
        cum = empty.cumsum(1)
        idx = (cum <= k[:, None]).sum(1)
        return torch.where(length < self.HW, idx, torch.full_like(idx, -1))

    # ---- stateful API with auto-reset -----------------------------------------------------

    def reset(self, seed: int | None = None) -> torch.Tensor:
        """Start all envs afresh from ``initial_states(N, seed)`` (``seed`` defaults to the
        constructor's)."""
        self._st = self.initial_states(self.num_envs, self.seed if seed is None else seed)
        return self.observe(self._st)

    def set_state(self, st: SnakeState) -> torch.Tensor:
        """Use state tuple ``st`` (batch N, or batch 1 broadcast to all N envs)."""
        if st[0].shape[0] == 1 and self.num_envs > 1:
            st = tuple(x.expand(self.num_envs, *x.shape[1:]).clone() for x in st)
        if st[0].shape[0] != self.num_envs:
            raise ValueError(f"state has batch {st[0].shape[0]}, env has {self.num_envs}")
        self._st = tuple(x.to(self.device) for x in st)
        return self.observe(self._st)

    @property
    def state(self) -> SnakeState:
        if self._st is None:
            raise RuntimeError("call reset() or set_state() before stepping")
        return self._st

    def step(self, action) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, dict]:
        """``(obs, reward, terminated, truncated, info)``; finished envs restart at once with
        the next key of their chain; ``info["final_obs"]`` holds the finished episodes'
        last observations."""
        action = torch.as_tensor(action, device=self.device).reshape(self.num_envs)
        st, reward, terminated, truncated = self.step_state(self.state, action)
        final_obs = self.observe(st)
        done = terminated | truncated
        fresh = self.spawn(_hash(st[5], _SALT_NEXT) & 0x7FFFFFFF)
        self._st = tuple(
            torch.where(done.view(-1, *([1] * (x.dim() - 1))), f, x)
            for f, x in zip(fresh, st, strict=True)
        )
        return self.observe(self._st), reward, terminated, truncated, {"final_obs": final_obs}
