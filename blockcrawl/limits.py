"""Size limits shared by the stages, written once (the 10 MiB body cap is read by every stage that takes a body)."""

MAX_BODY_BYTES = 10 * 1024 * 1024  # largest body fetched, and after decompression (crawl --max-bytes)

# --workers of `crawl` (analysis processes) and `index` (embedding threads): more than this is a typo,
# not a machine (`crawl --workers 1000` would start ~540 processes of ~60 MB before the OOM killer comes)
MAX_WORKERS = 256


def workers_error(n: int, lowest: int) -> str | None:
    """The complaint about a workers count outside lowest..MAX_WORKERS ("workers must be ..."), or None."""
    if lowest <= n <= MAX_WORKERS:
        return None
    return f"workers must be between {lowest} and {MAX_WORKERS} (got {n})"


def available_cpus() -> int:
    """CPUs this process may run on (the affinity mask: a container's share, not the host's)."""
    import os

    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


def available_memory() -> int | None:
    """Bytes that new processes may still take without swapping: /proc/meminfo's MemAvailable,
    lowered to a cgroup v2 limit's headroom when one is set (a container). None where unknown."""
    try:
        with open("/proc/meminfo", encoding="ascii") as f:
            avail = next((int(line.split()[1]) * 1024 for line in f if line.startswith("MemAvailable:")), None)
    except (OSError, ValueError, IndexError):
        avail = None
    try:
        with open("/sys/fs/cgroup/memory.max", encoding="ascii") as f:
            limit = f.read().strip()
        if limit != "max":
            with open("/sys/fs/cgroup/memory.current", encoding="ascii") as f:
                room = max(0, int(limit) - int(f.read().strip()))
            avail = room if avail is None else min(avail, room)
    except (OSError, ValueError):
        pass
    return avail
