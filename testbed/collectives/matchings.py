"""An alltoall in perfect rounds that share no link: ranks - 1 rounds, in each of which every rank
sends to one rank and receives from one, the round's flows on distinct directed links, every pair
once. Whether such rounds exist on a fabric and its routes is a 0-1 feasibility problem; scipy's
MILP solver (HiGHS) answers it: on BiGraph(2, 8) with its deterministic routes in well under a
second, where a greedy search had found at best 14 perfect rounds of 15."""
import numpy as np

SECONDS = 5.0       # beyond this the caller falls back to partial rounds


def perfect_rounds(links, ranks, seconds=SECONDS):
    """[[receiver of rank i] per round] with every round a permutation whose flows share no
    directed link, or None when the solver finds none within `seconds`. links: {(a, b): set of
    the directed links rank a's flow to rank b crosses} for every a != b."""
    from scipy.optimize import Bounds, LinearConstraint, milp  # a second to import: only where solved
    from scipy.sparse import coo_matrix
    pairs = sorted(links)
    count, rounds = len(pairs), ranks - 1
    rows, cols, row = [], [], 0

    def constraint(variables):
        nonlocal row
        rows.extend([row] * len(variables))
        cols.extend(variables)
        row += 1

    users = {}
    for p, pair in enumerate(pairs):
        for link in links[pair]:
            users.setdefault(link, []).append(p)
    equal = []                                               # the rows that must be exactly 1
    for p in range(count):                                   # every pair in one round
        equal.append(row)
        constraint([r * count + p for r in range(rounds)])
    for r in range(rounds):
        base = r * count
        for rank in range(ranks):                            # a rank sends once and receives once
            equal += [row, row + 1]
            constraint([base + p for p, (a, _) in enumerate(pairs) if a == rank])
            constraint([base + p for p, (_, b) in enumerate(pairs) if b == rank])
        for link in sorted(users):                           # a link carries one flow per round
            constraint([base + p for p in users[link]])
    matrix = coo_matrix((np.ones(len(rows)), (rows, cols)), shape=(row, rounds * count)).tocsr()
    lower = np.zeros(row)
    lower[equal] = 1
    upper = np.ones(row)
    fixed = np.zeros(rounds * count)                         # rounds are interchangeable: rank 0 sends
    for r in range(rounds):                                  # to rank r + 1 in round r
        fixed[r * count + pairs.index((0, r + 1))] = 1
    found = milp(np.zeros(rounds * count), constraints=LinearConstraint(matrix, lower, upper),
                 integrality=np.ones(rounds * count), bounds=Bounds(fixed, np.ones(rounds * count)),
                 options={"time_limit": seconds})
    if found.x is None or found.status not in (0,):
        return None
    chosen = found.x.round().astype(int)
    out = [[None] * ranks for _ in range(rounds)]
    for r in range(rounds):
        for p, (a, b) in enumerate(pairs):
            if chosen[r * count + p]:
                out[r][a] = b
    return out
