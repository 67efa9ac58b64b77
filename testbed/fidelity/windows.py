"""What an operator has of a span of a watched job, as the detector reads it (``diagnosis.Window``):
taken from a running watch (``runs.watch``) or from a stored trace (``faultbench.trace``) the same
way, so that a detector judges the same windows live and offline."""
import bisect

from testbed.fidelity.diagnosis import Window


def samples_in(samples_by_port, start, end, shift=0.0):
    """{port: its samples taken in [start, end]}, each (time, ...) sorted by time; a sample's time
    less `shift` is on the window's clock (a live watch samples on the wall clock)."""
    out = {}
    for port, samples in list(samples_by_port.items()):
        samples = samples[:]              # a live sampler appends as we read
        a = bisect.bisect_left(samples, start + shift, key=lambda sample: sample[0])
        b = bisect.bisect_right(samples, end + shift, key=lambda sample: sample[0])
        out[port] = [(t - shift, *rest) for t, *rest in samples[a:b]] if shift else samples[a:b]
    return out


def window_of(iterations, queues, edges, marks, events, start, end, shift=0.0):
    """The Window of [start, end]: the iterations that ended in it (one a rank stopped in ends
    after it was continued), the switch ports' queue samples, the hosts' egress samples, the ECN
    mark counts (where ports mark) and the port events [(time, switch, port, up)] taken in it."""
    return Window([it["timing"] for it in list(iterations) if start < it["end"] <= end],
                  samples_in(queues, start, end, shift), [e for e in events if start <= e[0] <= end],
                  edges=samples_in(edges, start, end, shift), marks=samples_in(marks, start, end, shift))
