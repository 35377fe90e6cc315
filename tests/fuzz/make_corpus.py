#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz (docs/fuzzing.md): a few small, real inputs per target,
each in the layout its harness reads. Run from anywhere; needs ffmpeg and ffprobe (the media
seeds are an H.264 and an H.265 GOP at 64x48, and AAC frames, made here). The seeds are committed:
rerun only when a harness's input layout changes."""
import os
import re
import shutil
import struct
import subprocess
import tempfile

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus")


def write(target, name, data):
    d = os.path.join(HERE, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


# --- protobuf, by hand (proto/vigil.proto field numbers) ---
def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, v):
    return varint(num << 3) + varint(v)


def field_bytes(num, b):
    if isinstance(b, str):
        b = b.encode()
    return varint((num << 3) | 2) + varint(len(b)) + b


def frame(body_field, body, payload=b""):
    env = field_bytes(body_field, body)
    return varint(len(env)) + env + payload


def hello(version=1, token=""):
    return frame(1, field_bytes(1, "vigil-fuzz") + field_bytes(2, "0.1.0") + field_varint(3, version) +
                 field_bytes(4, token))


def open_record(name="gate", extradata=b"\x01\x64\x00\x0a"):
    codec = field_bytes(1, "h264") + field_varint(3, 64) + field_varint(4, 48) + field_varint(5, 1) + \
        field_varint(6, 1000000) + field_bytes(7, extradata)
    return frame(3, field_bytes(1, name) + field_bytes(2, codec) + field_varint(3, 2000000) +
                 field_varint(4, 4000000))


def media_packet(seq, payload, key=False):
    body = field_varint(1, 1) + field_varint(2, seq) + field_varint(3, 1000000 + seq * 40000) + \
        field_varint(4, 1000000 + seq * 40000) + field_varint(5, 1) + field_varint(6, 1) + \
        field_varint(7, 40000) + field_varint(8, 1 if key else 0) + field_varint(9, len(payload))
    return frame(6, body, payload)


def ping(nonce=7):
    return frame(14, field_varint(1, nonce))


def end_record():
    return frame(17, field_varint(1, 1))


def wire_seeds():
    recording = hello() + open_record() + b"".join(
        media_packet(s, bytes([s]) * (200 if s == 1 else 50), s == 1) for s in range(1, 4)) + end_record()
    frames = {
        "hello": hello(),
        "hello_ping": hello(token="secret") + ping() + ping(8),
        "recording": recording,
        "bad_version": hello(version=2),
        "not_hello_first": ping(),
        "truncated": recording[:-7],
        "huge_length": b"\xff\xff\xff\x7f" + b"\x00" * 8,
    }
    for name, data in frames.items():
        write("frame_decoder", name, bytes([63]) + data)   # 64 bytes a piece
        write("frame_decoder", name + "_bytewise", bytes([0]) + data)
        write("wire_hello", name, bytes([0x1f << 2 | 3]) + data)  # auth on, token accepted, 32-byte reads
    write("wire_hello", "token_refused", bytes([2]) + hello(token="bad") + ping())


def http_seeds():
    reqs = {
        "get_export": b"GET /api/v1/cameras/gate/export.mp4?from=-5m&to=now HTTP/1.1\r\nHost: vigild\r\n"
                      b"Authorization: Bearer abc\r\nRange: bytes=0-1023\r\n\r\n",
        "post_event": b"POST /api/v1/events HTTP/1.1\r\nHost: vigild\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 47\r\n\r\n{\"camera\":\"gate\",\"start\":\"-5s\",\"type\":\"motion\"}",
        "keep_alive_two": b"GET /api/v1/cameras HTTP/1.1\r\nHost: a\r\n\r\nGET /metrics?access_token=x HTTP/1.1\r\n"
                          b"Host: a\r\nConnection: close\r\n\r\n",
        "chunked": b"PATCH /api/v1/cameras/gate HTTP/1.1\r\nHost: a\r\nContent-Type: application/json\r\n"
                   b"Transfer-Encoding: chunked\r\n\r\n10\r\n{\"enabled\":false\r\n1\r\n}\r\n0\r\n\r\n",
        "hls": b"GET /api/v1/cameras/gate/hls.m3u8?from=@1767225600.25&to=2026-01-01T00:10:00Z HTTP/1.0\r\n\r\n",
    }
    for name, data in reqs.items():
        write("http_request", name, bytes([127]) + data)
        write("http_request", name + "_small_reads", bytes([6]) + data)
    for name, (total, header) in {"first_last": (1 << 20, b"bytes=0-99"), "suffix": (5000, b"bytes=-500"),
                                  "open_end": (5000, b"bytes=100-"), "several": (5000, b"bytes=0-1, 5-9"),
                                  "whole": (77, b"")}.items():
        write("http_range", name, struct.pack("<Q", total) + header)
    for name, target in {
        "export": b"/api/v1/cameras/gate/export.mp4?from=@1767225600.25&to=2026-01-01T00:00:00Z",
        "events": b"/api/v1/events?from=-1h&to=now&camera=a&cameras=b,c&limit=10&cursor=1767225600000000:7",
        "encoded": b"/api/v1/cameras/front%20door/thumbnail.jpg?at=-90s&width=320&access_token=a%2Bb",
        "timeline": b"/api/v1/timeline?from=2026-11-23T21:00:00&to=2026-11-23T22:00:00&rate=4&cameras=x.y_z-1",
    }.items():
        write("http_query", name, target)
    for name, text in {"now": b"now", "seconds_ago": b"-90s", "minutes": b"-5m", "hours": b"-2.5h",
                       "days": b"-1d", "at": b"@1767225600.25", "local": b"2026-11-23T21:00:00",
                       "utc": b"2026-11-23T21:00:00Z"}.items():
        write("time_arg", name, text)
    bodies = {
        "camera": (0, b'{"name":"gate","url":"rtsp://user:pw@10.0.0.5:554/stream1","enabled":true,'
                      b'"retention_days":30,"substream_url":null}'),
        "lock": (1 << 3, b'{"camera":"gate","from":"-1h","to":"now","reason":"incident 42","locked_by":"ops"}'),
        "lock_us": (1 << 3, b'{"camera":"gate","from_us":1767225600000000,"to_us":1767225660000000.0}'),
        "token": (2 << 3, b'{"role":"viewer","label":"wall screen","expires_in_s":86400}'),
        "not_json_type": (2 | 2 << 3, b'{"role":"admin"}'),
    }
    for name, (sel, body) in bodies.items():
        write("json_body", name, bytes([sel]) + body)
    events = {
        "point": b'{"camera":"gate","start":"@1767225600.25","type":"motion"}',
        "full": b'{"camera":"gate","start_us":1767225600000000,"end_us":1767225605000000,"type":"person",'
                b'"object_class":"person","confidence":0.87,"location":{"x0":0.1,"y0":0.2,"x1":0.5,"y1":0.9},'
                b'"attributes":{"track":12,"tags":["a","b"],"nested":{"k":null}},"source":"analytics-1"}',
        "batch": b'[{"camera":"a","start":"-5m","end":"now","type":"line.cross"},'
                 b'{"camera":"b","start":"2026-01-01T00:00:00Z","type":"door_open","source":null}]',
    }
    for name, body in events.items():
        write("event_json", name, body)


# --- storage: record_ops.hpp programs ---
def op_record(seq_step=1, pts_step_ms=40, key=False, payload=300, fill=0x55, which=0, dts_back=0):
    return bytes([1, which, seq_step & 0xFF]) + struct.pack("<h", pts_step_ms) + \
        bytes([dts_back & 0xFF]) + struct.pack("<H", 400) + bytes([1 if key else 0]) + \
        struct.pack("<H", payload) + bytes([fill])


def op_raw(data):
    return bytes([0, len(data)]) + data


def op_seek(at):
    return bytes([2]) + struct.pack("<H", at)


def op_align():
    return bytes([3])


def storage_seeds():
    gop = op_record(0, 0, True, 2000) + b"".join(op_record(payload=500 + i) for i in range(7))
    write("record_scan", "gop", bytes([0b0110]) + gop + gop)
    write("record_scan", "small_blocks", bytes([0b0111]) + gop + op_align() + gop + op_seek(100) + op_u16(3000))
    write("record_scan", "torn_middle", bytes([0b0010]) + gop + op_raw(b"VGRC" + b"\x00" * 20) + gop)
    write("record_scan", "stale_stream", bytes([0b1110]) + struct.pack("<H", 0) + gop +
          op_record(which=0x91) + op_record())
    # segment_recovery: the pristine segment (no ops), damage in its data, a forged record after damage.
    write("segment_recovery", "pristine", b"")
    write("segment_recovery", "torn_tail", op_seek(4096 + 9000) + op_raw(b"\xde\xad" * 40))
    write("segment_recovery", "damaged_middle", op_seek(3 * 4096 + 100) + op_raw(b"\xff" * 100) +
          op_seek(16384 + 4096 + 200) + op_raw(b"\x00" * 60))
    write("segment_recovery", "resync_jump", op_seek(16384 + 4096) + op_record(20, 40, True, 900) +
          op_record() + op_record())
    write("segment_recovery", "extent_header", op_seek(16384) + op_raw(b"\x01" * 64))


def op_u16(v):
    return struct.pack("<H", v)


def stream_description(camera=b"gate", codec=b"h264", extradata=b"\x01\x64\x00\x0a\xff\xe1"):
    fields = [(1, camera), (2, b"main"), (3, b"video"), (4, codec)]
    if extradata:
        fields.append((5, extradata))
    for tag, v in [(6, 64), (7, 48), (8, 1), (9, 1000000), (10, 2000000), (11, 2000000), (12, 1767225600000000)]:
        fields.append((tag, struct.pack("<q", v)))
    fields.append((99, b"a later version's field"))
    body = b"".join(struct.pack("<HI", t, len(v)) + v for t, v in fields)
    return b"VGSD" + struct.pack("<HH", 1, len(fields)) + body


# --- media: record_ops-like layout of media_input.hpp ---
def ffprobe_hex(lines):
    out = bytearray()
    for line in lines:
        m = re.match(r"^[0-9a-f]{8}: ((?:[0-9a-f]{2,4} ?)+)", line)
        if m:
            out += bytes.fromhex(m.group(1).replace(" ", "")[:32])
    return bytes(out)


def probe(path):
    streams = subprocess.run(["ffprobe", "-loglevel", "error", "-show_streams", "-show_data", path],
                             check=True, capture_output=True, text=True).stdout.splitlines()
    extradata, grab = [], False
    for line in streams:
        if line.startswith("extradata="):
            grab = True
            continue
        if grab and not re.match(r"^[0-9a-f]{8}: ", line):
            grab = False
        if grab:
            extradata.append(line)
    packets = subprocess.run(["ffprobe", "-loglevel", "error", "-show_packets", "-show_data", path],
                             check=True, capture_output=True, text=True).stdout.split("[PACKET]")[1:]
    out = []
    for p in packets:
        lines = p.splitlines()
        key = any(l.startswith("flags=K") for l in lines)
        out.append((key, ffprobe_hex(lines)))
    return ffprobe_hex(extradata), out


def media_input(codec_index, flags, width, height, extradata, packets):
    data = bytes([codec_index, flags]) + struct.pack("<hhH", width, height, len(extradata)) + extradata
    for key, payload in packets:
        data += bytes([1 if key else 0]) + struct.pack("<hbH", 40, 0, len(payload)) + payload
    return data


def media_seeds():
    tmp = tempfile.mkdtemp()
    try:
        src = ["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i", "testsrc=size=64x48:rate=10",
               "-frames:v", "6"]
        h264 = os.path.join(tmp, "a.mp4")
        subprocess.run(src + ["-c:v", "libx264", "-g", "5", "-bf", "0", "-pix_fmt", "yuv420p", "-bsf:v",
                              "filter_units=remove_types=6", h264], check=True)
        hevc = os.path.join(tmp, "b.mp4")
        subprocess.run(src + ["-c:v", "libx265", "-x265-params", "log-level=none:keyint=5:bframes=0",
                              "-pix_fmt", "yuv420p", hevc], check=True)
        aac = os.path.join(tmp, "c.mp4")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-f", "lavfi", "-i",
                        "sine=frequency=440:duration=0.1", "-c:a", "aac", "-b:a", "32k", aac], check=True)
        annexb = os.path.join(tmp, "a.h264")
        subprocess.run(["ffmpeg", "-hide_banner", "-loglevel", "error", "-i", h264, "-c", "copy", "-bsf:v",
                        "h264_mp4toannexb", "-f", "h264", annexb], check=True)
        ex264, p264 = probe(h264)
        exhevc, phevc = probe(hevc)
        exaac, paac = probe(aac)
        with open(annexb, "rb") as f:
            whole = f.read()
        for flags, kind in ((0, "mp4"), (1, "fmp4")):
            write("media_writer", "h264_gop_" + kind, media_input(0, flags, 64, 48, ex264, p264))
            write("media_writer", "hevc_gop_" + kind, media_input(1, flags, 64, 48, exhevc, phevc))
            write("media_writer", "aac_" + kind, media_input(2, flags, 0, 0, exaac, paac[:4]))
        write("media_writer", "h264_annexb_no_extradata", media_input(0, 1, 64, 48, b"", [(True, whole)]))
        write("thumbnail", "h264_keyframe", media_input(0, 0, 64, 48, ex264, p264[:1]))
        write("thumbnail", "h264_annexb", media_input(0, 0, 64, 48, b"", [(True, whole[:2000])]))
        write("thumbnail", "hevc_keyframe", media_input(1, 0, 64, 48, exhevc, phevc[:1]))
    finally:
        shutil.rmtree(tmp)


def rtsp_seeds():
    """rtsp_media: SDPs as whole inputs, and FFmpeg's RTP of a 64x48 H.264 and H.265 stream
    (tests/rtsp/data, from tests/rtsp/make_fixtures.py) after the codec byte, whole and with a
    packet lost and one repeated; the first packets of the GStreamer camera's RTP."""
    data = os.path.join(os.path.dirname(HERE), "..", "rtsp", "data")
    for name in ("h264", "h265"):
        with open(os.path.join(data, name + ".sdp"), "rb") as f:
            write("rtsp_media", name + "_sdp", f.read())
    write("rtsp_media", "gstreamer_sdp",
          b"v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=Session streamed with GStreamer\r\nt=0 0\r\na=control:*\r\n"
          b"m=video 0 RTP/AVP 96\r\nb=AS:2097\r\na=rtpmap:96 H264/90000\r\na=fmtp:96 packetization-mode=1;"
          b"sprop-parameter-sets=Z0LAFdoFB+wFqDAwNSgAAAMACAAAAwGUeLF1,aM48gA==;profile-level-id=42c015\r\n"
          b"a=control:stream=0\r\n")
    for codec_byte, name in ((0, "h264"), (1, "h265")):
        with open(os.path.join(data, name + ".rtp"), "rb") as f:
            rtp = f.read()
        write("rtsp_media", name + "_rtp", bytes([codec_byte]) + rtp)
        packets = []
        at = 0
        while at + 2 <= len(rtp):
            n = struct.unpack_from("<H", rtp, at)[0]
            packets.append(rtp[at:at + 2 + n])
            at += 2 + n
        lossy = packets[:3] + packets[4:8] + [packets[7]] + packets[8:]
        write("rtsp_media", name + "_rtp_loss", bytes([codec_byte]) + b"".join(lossy))
    with open(os.path.join(data, "gstreamer.rtp"), "rb") as f:
        rtp = f.read()
    at = 0
    for _ in range(20):  # its first keyframe and a few frames after it
        at += 2 + struct.unpack_from("<H", rtp, at)[0]
    write("rtsp_media", "gstreamer_rtp", bytes([0]) + rtp[:at])
    # The session's messages: a camera's 401 with both challenges, a DESCRIBE's answer, a URL.
    write("rtsp_media", "response_401_digest",
          b'RTSP/1.0 401 Unauthorized\r\nCSeq: 2\r\nWWW-Authenticate: Digest realm="IP Camera", nonce="a1b2c3", '
          b'qop="auth"\r\nWWW-Authenticate: Basic realm="IP Camera"\r\n\r\n')
    write("rtsp_media", "response_200_sdp",
          b"RTSP/1.0 200 OK\r\nCSeq: 3\r\nContent-Base: rtsp://10.0.0.7/s/\r\nContent-Length: 60\r\n\r\n"
          b"v=0\r\nm=video 0 RTP/AVP 96\r\nb=AS:4000\r\na=rtpmap:96 H264/90000\r\n")
    write("rtsp_media", "url_credentials", b"rtsp://admin:p%40ss@[fe80::1]:8554/Streaming/Channels/101")


def main():
    for d in os.listdir(HERE):
        if os.path.isdir(os.path.join(HERE, d)):
            shutil.rmtree(os.path.join(HERE, d))
    wire_seeds()
    http_seeds()
    storage_seeds()
    write("stream_description", "h264", stream_description())
    write("stream_description", "no_extradata", stream_description(extradata=b""))
    write("stream_description", "long_names", stream_description(camera=b"c" * 64, codec=b"hevc"))
    media_seeds()
    rtsp_seeds()


if __name__ == "__main__":
    main()
