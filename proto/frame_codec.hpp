#pragma once
// Framing of the wire protocol (docs/protocol.md):
//
//   frame = varint32 L | Envelope (L bytes) | payload (MediaPacket.payload_bytes raw bytes)
//
// The length prefix is protobuf's standard delimited format; only a MediaPacket has a
// payload, which travels outside the protobuf so video bytes are never copied into a
// protobuf string.
//
// Errors are values (common/errors.hpp): the decoder is noexcept and rejects oversize,
// truncated, unknown-type and garbage input with frame_too_large, truncated_frame,
// unknown_message or malformed_frame; it never allocates from an unchecked length.
// Thread: a decoder belongs to one connection and is used by one thread at a time.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/errors.hpp"
#include "proto/vigil.pb.h"

namespace vigil::proto {

inline constexpr std::uint32_t kProtocolVersion = 1;
inline constexpr std::size_t kMaxHeaderBytes = 64 * 1024;
// Until a connection has said hello, a frame's payload may be no larger than this (whatever
// --max-frame-bytes allows later): an unauthenticated peer makes the server buffer little.
inline constexpr std::size_t kMaxPreHelloPayloadBytes = 64 * 1024;

struct FrameLimits {
  std::size_t max_header_bytes = kMaxHeaderBytes;
  std::size_t max_payload_bytes = 16u << 20;
};

// Appends one frame to OUT. REQUIRES: for a MediaPacket, payload_bytes == payload.size();
// other messages carry no payload. Throws std::invalid_argument when that is violated
// (a programming error, never peer input).
void append_frame(std::string& out, const Envelope& msg, std::span<const std::byte> payload = {});
// The length prefix and Envelope only: the caller sends the MediaPacket's payload_bytes of
// payload right after it (a gather write, so served video is never copied into a frame).
void append_frame_header(std::string& out, const Envelope& msg);
std::string encode_frame(const Envelope& msg, std::span<const std::byte> payload = {});

// One decoded frame. PAYLOAD points into the decoder's buffer and stays valid until the next
// call to next() or feed().
struct Frame {
  Envelope msg;
  std::span<const std::byte> payload;
};

class FrameDecoder {
 public:
  explicit FrameDecoder(FrameLimits limits = {}) noexcept : limits_(limits) {}
  // New limits for the frames not yet parsed (the session's, once hello is answered).
  void set_limits(FrameLimits limits) noexcept { limits_ = limits; }

  // Buffers bytes as they arrive, in pieces of any size.
  void feed(std::span<const std::byte> bytes);
  // Zero-copy receive: prepare() gives room for at least N more bytes at the end of the buffer
  // (a socket reads straight into it), commit() says how many arrived. Payloads returned by
  // next() are views into this buffer: a packet is copied once, into the stream's double buffer.
  std::span<std::byte> prepare(std::size_t n);
  void commit(std::size_t n) noexcept { end_ += n; }
  // The next complete frame, nullopt if more bytes are needed, or an error. After an error
  // the decoder keeps returning it: reply with an Error frame and close the connection.
  Result<std::optional<Frame>> next() noexcept;
  // At end of stream: truncated_frame if a partial frame is buffered.
  Result<void> finish() const noexcept;
  // Bytes received but not yet returned as part of a frame.
  std::size_t buffered_bytes() const noexcept { return end_ - start_ - consume_on_next_; }
  // Bytes of its buffer in memory now (what a session costs, as opposed to its buffer's size).
  std::size_t resident_bytes() const noexcept;

 private:
  Result<std::optional<Frame>> fail(errc code) noexcept;

  FrameLimits limits_;
  // Releases the frame last returned and moves what is left to the front when that is cheap.
  void reclaim() noexcept;

  // Page-aligned and never zero-filled: only the pages bytes arrived in are memory, and once
  // everything received was consumed, the pages beyond its first 64 KiB go back — a session
  // costs what it holds, not the largest burst it ever read (a keyframe's, hundreds of kB).
  struct FreeBytes {
    void operator()(std::byte* p) const noexcept;
  };
  std::unique_ptr<std::byte, FreeBytes> buf_;
  std::size_t capacity_ = 0;     // of buf_; the data is [start_, end_)
  std::size_t touched_end_ = 0;  // the furthest byte offered to the socket since pages went back
  std::size_t end_ = 0;
  std::size_t start_ = 0;            // bytes of buf_ already consumed
  std::size_t consume_on_next_ = 0;  // size of the frame last returned
  // A parsed header waiting for its payload, so it is not parsed again on every feed.
  std::optional<Envelope> header_;
  std::size_t header_frame_bytes_ = 0;  // varint + header
  std::size_t payload_bytes_ = 0;
  boost::system::error_code error_;
};

// protobuf logs parse complaints (e.g. invalid UTF-8 in a string field) itself, at ERROR:
// that is peer input, so route it to our log at debug level instead, where a hostile peer
// cannot flood the operator's log. Call once at start-up.
void route_protobuf_logs_to_debug();

// The wire Error message for a vigil error code.
Envelope make_error(errc code, std::string_view message);
ErrorCode to_wire(errc code) noexcept;

}  // namespace vigil::proto
