"""Which addresses cogserve may connect to on a client's behalf: file inputs, webhooks,
output uploads.

A client names those URLs, and the server fetches or posts to them from inside the
operator's network, so by default anyone who can reach the port can make it request
`http://127.0.0.1:...`, a private service or the cloud metadata address
169.254.169.254. Cog allows that, and so does the default policy (`any`).
`COGSERVE_URL_POLICY=public` refuses every address that is not globally routable
(loopback, private, link-local, shared, reserved, multicast, unspecified, and
IPv4-mapped forms of them). The check is made on the addresses a name resolves to,
and the connection is made to the checked address, so a name that resolves to a
private address, a DNS answer that changes in between (rebinding) and a redirect
to an internal URL are all refused.

Standard library only: the worker imports this for downloads.
"""

from __future__ import annotations

import enum
import ipaddress
import socket

from cogserve.process.envvars import env_choice


class URLPolicy(enum.Enum):
    ANY = "any"  # Cog's behaviour: every address
    PUBLIC = "public"  # globally routable addresses only

    @classmethod
    def from_env(cls) -> URLPolicy:
        """COGSERVE_URL_POLICY, read by the parent's Settings and the worker's Downloads."""
        return env_choice("COGSERVE_URL_POLICY", cls, cls.ANY)


class BlockedAddress(OSError):
    """A URL's host resolved to an address the policy refuses."""


def is_public(address: str) -> bool:
    ip = ipaddress.ip_address(address.split("%", 1)[0])  # drop an IPv6 zone
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check(policy: URLPolicy, host: str, address: str) -> None:
    """Raise BlockedAddress if `policy` refuses connecting to `address` (for `host`)."""
    if policy is URLPolicy.PUBLIC and not is_public(address):
        shown = host if host == address else f"{host} ({address})"
        raise BlockedAddress(f"{shown} is not a public address; refused by "
                             "COGSERVE_URL_POLICY=public")


def create_connection(address: tuple[str, int], timeout: float | None = None,
                      source_address: tuple[str, int] | None = None, *,
                      policy: URLPolicy) -> socket.socket:
    """socket.create_connection that resolves first and connects only to the addresses
    `policy` allows (its owner passes it: the worker's `files.Fetcher`)."""
    if policy is URLPolicy.ANY:
        return socket.create_connection(address, timeout, source_address)
    host, port = address
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    last: OSError | None = None
    for family, kind, proto, _, sockaddr in infos:
        check(policy, host, str(sockaddr[0]))
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not None:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            last = exc
    raise last or OSError(f"{host}: no addresses")
