"""One error hierarchy for the whole driver, mapped to exit codes and gRPC answers at the edges.

Every error message names the object, field or path it is about, so a user can fix the input
without reading the source.
"""

from __future__ import annotations


class FakeDraError(Exception):
    """Base of every error this project raises on purpose."""

    exit_code: int = 1


class InputError(FakeDraError):
    """Invalid user input: flags, files, objects. The CLI exits 2."""

    exit_code = 2


class ConfigError(InputError):
    """A driver or hardware configuration file is invalid."""


class DiscoveryError(FakeDraError):
    """The hardware could not be discovered at all (e.g. the sysfs root does not exist)."""

    exit_code = 2


class AllocationError(FakeDraError):
    """A claim cannot be allocated; the message says which request and why."""

    exit_code = 1


class SearchBudgetExceeded(AllocationError):
    """The allocator gave up on a pathological search instead of hanging."""


class InvalidObjectError(FakeDraError):
    """The API server, or the local store standing in for it, refused to store an object that
    fails validation (HTTP 422 Unprocessable Entity); the message names the object and fields."""

    exit_code = 2
    status = 422

    def __init__(self, message: str, dropped_gates: frozenset[str] | set[str] = frozenset()) -> None:
        super().__init__(message)
        # Gates whose fields the server dropped before the object became invalid (local store).
        self.dropped_gates = frozenset(dropped_gates)


class ConflictError(FakeDraError):
    """An optimistic-concurrency write lost a race (resourceVersion mismatch)."""


class NotFoundError(FakeDraError):
    """An object does not exist in the API or the local store."""


class ForbiddenError(FakeDraError):
    """The API server (RBAC, admission) refused a request this identity is not allowed to make."""


class PrepareError(FakeDraError):
    """A claim cannot be prepared on this node; reported per claim to the kubelet."""


class CallAborted(FakeDraError):
    """A kubelet call ran out of time or was cancelled by a plugin shutdown before it committed;
    everything it had recorded was rolled back, so the kubelet's retry starts from scratch."""
