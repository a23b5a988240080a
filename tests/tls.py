"""A private CA, a server certificate it signs for 127.0.0.1, and a TLS front for any local TCP server.

The front terminates TLS and pipes the bytes to the plain server behind it (a real ``chroma run``, the
REST and gRPC doubles), so the vendor's own client does the whole handshake and certificate check.
"""

from __future__ import annotations

import contextlib
import datetime
import ipaddress
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID


@dataclass(frozen=True)
class Certificates:
    ca: Path  # what a client must trust
    cert: Path  # the server's chain
    key: Path
    other_ca: Path  # a CA that did not sign the server's certificate


def _name(common_name: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])


def _ca(common_name: str) -> tuple[ec.EllipticCurvePrivateKey, x509.Certificate]:
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name(common_name))
        .issuer_name(_name(common_name))
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(
            x509.KeyUsage(True, False, False, False, False, True, True, False, False), critical=True
        )  # digital signature, cert sign, CRL sign
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return key, cert


def make_certificates(folder: Path) -> Certificates:
    """A fresh CA and a server certificate for ``127.0.0.1`` and ``localhost`` signed by it."""
    ca_key, ca_cert = _ca("vdbguard test CA")
    _, other_cert = _ca("some other CA")
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(_name("127.0.0.1"))
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
        .sign(ca_key, hashes.SHA256())
    )
    folder.mkdir(parents=True, exist_ok=True)
    pem = serialization.Encoding.PEM
    paths = Certificates(folder / "ca.pem", folder / "server.pem", folder / "server.key", folder / "other-ca.pem")
    paths.ca.write_bytes(ca_cert.public_bytes(pem))
    paths.other_ca.write_bytes(other_cert.public_bytes(pem))
    paths.cert.write_bytes(cert.public_bytes(pem))
    paths.key.write_bytes(key.private_bytes(pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    paths.key.chmod(0o600)
    return paths


class TlsFront:
    """Listens with TLS on a free local port and forwards each connection to ``127.0.0.1:backend_port``."""

    def __init__(self, certificates: Certificates, backend_port: int) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(certificates.cert, certificates.key)
        self.context.set_alpn_protocols(["h2", "http/1.1"])  # gRPC clients insist on h2
        self.backend_port = backend_port
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.handshake_failures = 0
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            client = self.context.wrap_socket(raw, server_side=True)
        except (ssl.SSLError, OSError):
            self.handshake_failures += 1
            raw.close()
            return
        try:
            backend = socket.create_connection(("127.0.0.1", self.backend_port))
        except OSError:
            client.close()
            return
        threading.Thread(target=_pipe, args=(backend, client), daemon=True).start()
        _pipe(client, backend)

    def wait_for_handshake_failures(self, above: int, timeout: float = 10.0) -> bool:
        """The server side sees a refused handshake a moment after the client gives up, in its own thread."""
        deadline = time.monotonic() + timeout
        while self.handshake_failures <= above and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.handshake_failures > above

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.listener.close()


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while data := source.recv(65536):
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock in (source, target):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()
