"""A deliberately small RTMP client for hostile tests: it speaks just enough of the protocol
(simple handshake, chunk headers, AMF0 commands) to reach a given point of a publish and
then misbehave there. Written from the RTMP specification, independent of the daemon's code."""
import os
import socket
import ssl
import struct
import time


def amf0(value):
    if isinstance(value, bool):
        return b"\x01" + (b"\x01" if value else b"\x00")
    if isinstance(value, (int, float)):
        return b"\x00" + struct.pack(">d", float(value))
    if isinstance(value, str):
        data = value.encode()
        return b"\x02" + struct.pack(">H", len(data)) + data
    if value is None:
        return b"\x05"
    if isinstance(value, dict):
        out = b"\x03"
        for key, item in value.items():
            data = key.encode()
            out += struct.pack(">H", len(data)) + data + amf0(item)
        return out + b"\x00\x00\x09"
    raise TypeError(value)


def chunk(csid, type_id, payload, stream_id=0, timestamp=0, chunk_size=128):
    """One message as fmt-0 + fmt-3 chunks."""
    header = bytes([csid & 0x3F]) + timestamp.to_bytes(3, "big") + len(payload).to_bytes(3, "big") + bytes([type_id]) \
        + struct.pack("<I", stream_id)
    out = header + payload[:chunk_size]
    rest = payload[chunk_size:]
    while rest:
        out += bytes([0xC0 | (csid & 0x3F)]) + rest[:chunk_size]
        rest = rest[chunk_size:]
    return out


class RawRTMP:
    def __init__(self, host, port, secure=False, timeout=5):
        self.sock = socket.create_connection((host, port), timeout=timeout)
        if secure:
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            self.sock = context.wrap_socket(self.sock, server_hostname=host)
        self.sock.settimeout(timeout)

    def send(self, data):
        self.sock.sendall(data)

    def recv_some(self, n=65536):
        try:
            return self.sock.recv(n)
        except (socket.timeout, ssl.SSLError):
            return None

    def handshake(self):
        c1 = struct.pack(">II", int(time.time()) & 0xFFFFFFFF, 0) + os.urandom(1528)
        self.send(b"\x03" + c1)
        received = b""
        while len(received) < 1 + 1536 * 2:
            data = self.sock.recv(65536)
            if not data:
                raise ConnectionError("closed during the handshake")
            received += data
        s1 = received[1:1537]
        self.send(s1)  # C2 echoes S1

    def command(self, name, transaction, *args, stream_id=0, csid=3):
        payload = amf0(name) + amf0(transaction) + b"".join(amf0(a) for a in args)
        self.send(chunk(csid, 20, payload, stream_id=stream_id))

    def connect(self, app="app"):
        self.command("connect", 1, {"app": app, "type": "nonprivate", "flashVer": "FMLE/3.0", "tcUrl": f"rtmp://127.0.0.1/{app}"})

    def publish(self, key, app="app"):
        self.connect(app)
        self.command("releaseStream", 2, None, key)
        self.command("FCPublish", 3, None, key)
        self.command("createStream", 4, None)
        time.sleep(0.2)
        self.command("publish", 5, None, key, "live", stream_id=1, csid=4)

    def read_until_closed(self, limit=10.0):
        """Reads until the server closes the connection; returns (closed, seconds, bytes)."""
        started = time.time()
        total = b""
        while time.time() - started < limit:
            try:
                data = self.sock.recv(65536)
            except socket.timeout:
                continue
            except (ConnectionResetError, ssl.SSLError, OSError):
                return True, time.time() - started, total
            if not data:
                return True, time.time() - started, total
            total += data
        return False, time.time() - started, total

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def flv_tags(path):
    """(type, timestamp ms, payload) of every tag of an FLV file."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:3] != b"FLV":
        raise ValueError(f"{path} is not FLV")
    offset = int.from_bytes(data[5:9], "big") + 4
    tags = []
    while offset + 11 <= len(data):
        kind = data[offset]
        size = int.from_bytes(data[offset + 1:offset + 4], "big")
        timestamp = int.from_bytes(data[offset + 4:offset + 7], "big") | (data[offset + 7] << 24)
        tags.append((kind, timestamp, data[offset + 11:offset + 11 + size]))
        offset += 11 + size + 4
    return tags
