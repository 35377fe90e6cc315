#!/usr/bin/env python3
"""Writes tests/rtsp/data: an H.264 and an H.265 stream at 64x48 (10 frames, a keyframe every 5,
Annex B elementary streams: NAME.es) and the RTP packets FFmpeg's RTP muxer makes of them (NAME.rtp:
each packet after its 16-bit little-endian length, the layout tests/fuzz/rtsp_media_fuzz.cpp reads),
with a small packet size so that large NAL units are fragmented, and its SDP (NAME.sdp). rtp_stream_test.cpp checks that
the depacketizer gives back the elementary stream's NAL units. Needs ffmpeg (libx264, libx265).
Also gstreamer.sdp and gstreamer.rtp: 2 s of what the integration tests' GStreamer RTSP camera
(tests/support/rtsp_camera.py, 320x240 H.264 at 100 kbit/s, a keyframe a second) sends over RTSP
interleaved in TCP (RFC 2326 §10.12), from its first packet. Needs Debian's /usr/bin/python3 with gi
for the camera. The files are committed: rerun only to change them."""
import os
import socket
import struct
import subprocess
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def encode(codec, path):
    args = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-y", "-f", "lavfi", "-i",
            "testsrc=size=64x48:rate=25", "-frames:v", "10", "-pix_fmt", "yuv420p", "-g", "5", "-bf", "0"]
    if codec == "h264":
        args += ["-c:v", "libx264", "-threads", "1", "-f", "h264", path]
    else:
        args += ["-c:v", "libx265", "-x265-params", "log-level=error:pools=none:frame-threads=1",
                 "-f", "hevc", path]
    subprocess.run(args, check=True)


def packetize(es_path, sdp_path):
    """FFmpeg's RTP of ES_PATH, received on a loopback UDP socket (in order: one sender, loopback),
    and its SDP written to SDP_PATH."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", es_path, "-c", "copy",
                    "-payload_type", "96", "-pkt_size", "200", "-sdp_file", sdp_path, "-f", "rtp",
                    f"rtp://127.0.0.1:{port}?rtcpport={port + 1}"], check=True, stdout=subprocess.DEVNULL)
    sock.settimeout(1.0)
    packets = []
    try:
        while True:
            packets.append(sock.recv(65536))
    except socket.timeout:
        pass
    return packets


def rtsp_request(sock, reader, method, url, cseq, headers=""):
    sock.sendall(f"{method} {url} RTSP/1.0\r\nCSeq: {cseq}\r\n{headers}\r\n".encode())
    head = b""
    while not head.endswith(b"\r\n\r\n"):
        head += reader.read(1)
    text = head.decode()
    assert text.startswith("RTSP/1.0 200"), text
    length = 0
    fields = {}
    for line in text.split("\r\n")[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            fields[k.strip().lower()] = v.strip()
    length = int(fields.get("content-length", "0"))
    return fields, reader.read(length)


def capture_gstreamer(seconds=2.0):
    """The GStreamer camera's SDP and its first SECONDS of RTP (channel 0), by marker bits at 25 fps."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    camera = subprocess.Popen(["/usr/bin/python3", os.path.join(root, "tests/support/rtsp_camera.py"), "0", "100"],
                              stdout=subprocess.PIPE, text=True)
    try:
        port = int(camera.stdout.readline().split()[1])
        url = f"rtsp://127.0.0.1:{port}/cam1"
        sock = socket.create_connection(("127.0.0.1", port))
        reader = sock.makefile("rb")
        _, sdp = rtsp_request(sock, reader, "DESCRIBE", url, 1, "Accept: application/sdp\r\n")
        fields, _ = rtsp_request(sock, reader, "SETUP", url + "/stream=0", 2,
                                 "Transport: RTP/AVP/TCP;unicast;interleaved=0-1\r\n")
        session = fields["session"].split(";")[0]
        rtsp_request(sock, reader, "PLAY", url, 3, f"Session: {session}\r\n")
        packets = []
        markers = 0
        while markers < int(seconds * 25):
            magic = reader.read(1)
            assert magic == b"$", magic
            channel, length = struct.unpack(">BH", reader.read(3))
            data = reader.read(length)
            if channel == 0:
                packets.append(data)
                markers += data[1] >> 7
        sock.close()
        return sdp, packets
    finally:
        camera.terminate()
        camera.wait()


def main():
    os.makedirs(HERE, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        for codec in ("h264", "h265"):
            es = os.path.join(tmp, codec + ".es")
            encode(codec, es)
            packets = packetize(es, os.path.join(HERE, codec + ".sdp"))
            with open(es, "rb") as f, open(os.path.join(HERE, codec + ".es"), "wb") as out:
                out.write(f.read())
            with open(os.path.join(HERE, codec + ".rtp"), "wb") as out:
                for p in packets:
                    out.write(struct.pack("<H", len(p)) + p)
            print(codec, len(packets), "packets")
    sdp, packets = capture_gstreamer()
    with open(os.path.join(HERE, "gstreamer.sdp"), "wb") as out:
        out.write(sdp)
    with open(os.path.join(HERE, "gstreamer.rtp"), "wb") as out:
        for p in packets:
            out.write(struct.pack("<H", len(p)) + p)
    print("gstreamer", len(packets), "packets")


if __name__ == "__main__":
    main()
