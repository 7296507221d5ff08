"""Shared by the GPU checks: the supervisor's HTTP endpoints and Prometheus text."""
import urllib.request


def http(port, path, method="GET"):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", method=method)
    with urllib.request.urlopen(req, timeout=60) as r:
        return r.read().decode()


def value(text, family, extra=""):
    """The first sample of `family` whose labels contain `extra`; None if absent."""
    for line in text.splitlines():
        if line.startswith(family + "{") and extra in line:
            return float(line.rsplit(" ", 1)[1])
    return None
