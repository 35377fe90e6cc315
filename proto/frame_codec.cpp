#include "proto/frame_codec.hpp"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/stubs/logging.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>

#include "common/log.hpp"
#include "common/page_memory.hpp"

namespace vigil::proto {
namespace {

using google::protobuf::io::CodedInputStream;
using google::protobuf::io::CodedOutputStream;

constexpr std::size_t kMaxVarint32Bytes = 5;
// Compact the buffer once this many consumed bytes sit in front of unread ones.
constexpr std::size_t kCompactThreshold = 64 * 1024;
// A drained buffer gives back its pages beyond this many bytes (100 ms of a 4 Mbit/s camera's
// P-frames fit; a keyframe's burst spills over, and that goes back).
constexpr std::size_t kKeptBytes = 64 * 1024;
constexpr std::size_t kPageBytes = 4096;  // the buffer's alignment, so its pages can be given back

}  // namespace

void append_frame_header(std::string& out, const Envelope& msg) {
  const std::size_t header = msg.ByteSizeLong();
  if (header > kMaxHeaderBytes) throw std::invalid_argument("append_frame: header exceeds kMaxHeaderBytes");
  const auto len = static_cast<std::uint32_t>(header);
  const std::size_t prefix = CodedOutputStream::VarintSize32(len);
  const std::size_t old = out.size();
  out.resize(old + prefix + header);
  auto* p = reinterpret_cast<std::uint8_t*>(out.data() + old);
  p = CodedOutputStream::WriteVarint32ToArray(len, p);
  msg.SerializeWithCachedSizesToArray(p);
}

void append_frame(std::string& out, const Envelope& msg, std::span<const std::byte> payload) {
  const std::size_t declared = msg.has_media_packet() ? msg.media_packet().payload_bytes() : 0;
  if (declared != payload.size()) {
    throw std::invalid_argument("append_frame: payload of " + std::to_string(payload.size()) +
                                " bytes does not match the declared " + std::to_string(declared));
  }
  append_frame_header(out, msg);
  if (!payload.empty()) {
    const std::size_t old = out.size();
    out.resize(old + payload.size());
    std::memcpy(out.data() + old, payload.data(), payload.size());
  }
}

std::string encode_frame(const Envelope& msg, std::span<const std::byte> payload) {
  std::string out;
  append_frame(out, msg, payload);
  return out;
}

void FrameDecoder::FreeBytes::operator()(std::byte* p) const noexcept { std::free(p); }

std::size_t FrameDecoder::resident_bytes() const noexcept { return page_memory::resident_bytes(buf_.get(), capacity_); }

void FrameDecoder::reclaim() noexcept {
  start_ += consume_on_next_;
  consume_on_next_ = 0;
  if (start_ == end_) {
    start_ = end_ = 0;
    if (touched_end_ > kKeptBytes) {
      // Drained: nothing in it is referenced any more (payloads are valid only until now). The
      // first kKeptBytes stay: an ordinary burst (P-frames) fits them and faults nothing in; only
      // what a keyframe's burst spilled beyond them goes back.
      (void)page_memory::drop(buf_.get() + kKeptBytes, touched_end_ - kKeptBytes);
      touched_end_ = 0;
    }
  } else if (start_ >= kCompactThreshold) {
    // Only the tail of a partial frame moves: whole frames were consumed in place.
    std::memmove(buf_.get(), buf_.get() + start_, end_ - start_);
    end_ -= start_;
    start_ = 0;
  }
}

std::span<std::byte> FrameDecoder::prepare(std::size_t n) {
  reclaim();
  if (capacity_ < end_ + n) {
    const std::size_t capacity = std::max(end_ + n, capacity_ * 2) / kPageBytes * kPageBytes + kPageBytes;
    auto* bigger = static_cast<std::byte*>(std::aligned_alloc(kPageBytes, capacity));
    if (bigger == nullptr) throw std::bad_alloc();
    if (end_ > start_) std::memcpy(bigger + start_, buf_.get() + start_, end_ - start_);
    buf_.reset(bigger);
    capacity_ = capacity;
  }
  touched_end_ = std::max(touched_end_, end_ + n);
  return {buf_.get() + end_, n};
}

void FrameDecoder::feed(std::span<const std::byte> bytes) {
  auto room = prepare(bytes.size());
  if (!bytes.empty()) std::memcpy(room.data(), bytes.data(), bytes.size());
  commit(bytes.size());
}

Result<std::optional<Frame>> FrameDecoder::fail(errc code) noexcept {
  error_ = make_error_code(code);
  header_.reset();
  return error_;
}

Result<std::optional<Frame>> FrameDecoder::next() noexcept {
  if (error_) return error_;
  start_ += consume_on_next_;
  consume_on_next_ = 0;
  const std::size_t avail = end_ - start_;
  const auto* base = reinterpret_cast<const std::uint8_t*>(buf_.get() + start_);

  if (!header_) {
    if (avail == 0) return std::optional<Frame>{};
    std::uint32_t len = 0;
    CodedInputStream in(base, static_cast<int>(std::min(avail, kMaxVarint32Bytes)));
    if (!in.ReadVarint32(&len)) {
      // Incomplete varint, or one that can only encode a length far above the limit:
      // three continuation bytes already mean >= 2^21 bytes > kMaxHeaderBytes.
      const std::size_t seen = std::min(avail, kMaxVarint32Bytes);
      bool all_continue = std::all_of(base, base + seen, [](std::uint8_t b) { return b & 0x80; });
      if (all_continue && seen >= 3) return fail(errc::frame_too_large);
      if (avail >= kMaxVarint32Bytes) return fail(errc::malformed_frame);
      return std::optional<Frame>{};
    }
    if (len > limits_.max_header_bytes) return fail(errc::frame_too_large);
    const std::size_t prefix = static_cast<std::size_t>(in.CurrentPosition());
    if (avail < prefix + len) return std::optional<Frame>{};
    Envelope env;
    if (!env.ParseFromArray(base + prefix, static_cast<int>(len))) return fail(errc::malformed_frame);
    if (env.body_case() == Envelope::BODY_NOT_SET) return fail(errc::unknown_message);
    payload_bytes_ = env.has_media_packet() ? env.media_packet().payload_bytes() : 0;
    if (payload_bytes_ > limits_.max_payload_bytes) return fail(errc::frame_too_large);
    header_frame_bytes_ = prefix + len;
    header_ = std::move(env);
  }
  if (avail < header_frame_bytes_ + payload_bytes_) return std::optional<Frame>{};
  Frame frame{std::move(*header_),
              std::span<const std::byte>(buf_.get() + start_ + header_frame_bytes_, payload_bytes_)};
  header_.reset();
  consume_on_next_ = header_frame_bytes_ + payload_bytes_;
  return std::optional<Frame>{std::move(frame)};
}

Result<void> FrameDecoder::finish() const noexcept {
  if (error_) return error_;
  if (end_ - start_ - consume_on_next_ > 0) return make_error_code(errc::truncated_frame);
  return {};
}

ErrorCode to_wire(errc code) noexcept {
  switch (code) {
    case errc::frame_too_large: return ERROR_CODE_FRAME_TOO_LARGE;
    case errc::truncated_frame: return ERROR_CODE_TRUNCATED_FRAME;
    case errc::malformed_frame: return ERROR_CODE_MALFORMED_FRAME;
    case errc::unknown_message: return ERROR_CODE_UNKNOWN_MESSAGE;
    case errc::unsupported: return ERROR_CODE_UNSUPPORTED;
    case errc::unauthenticated: return ERROR_CODE_UNAUTHENTICATED;
    case errc::permission_denied: return ERROR_CODE_PERMISSION_DENIED;
    case errc::invalid_argument: return ERROR_CODE_INVALID_ARGUMENT;
    case errc::admission_refused: return ERROR_CODE_ADMISSION_REFUSED;
    case errc::unavailable: return ERROR_CODE_UNAVAILABLE;
    case errc::not_found: return ERROR_CODE_NOT_FOUND;
    case errc::rate_exceeded: return ERROR_CODE_RATE_EXCEEDED;
    case errc::frame_exceeds_buffer: return ERROR_CODE_FRAME_EXCEEDS_BUFFER;
    case errc::busy: return ERROR_CODE_UNAVAILABLE;
    case errc::io_error: return ERROR_CODE_IO_ERROR;
    default: return ERROR_CODE_INTERNAL;
  }
}

void route_protobuf_logs_to_debug() {
  google::protobuf::SetLogHandler(
      [](google::protobuf::LogLevel level, const char* file, int line, const std::string& message) {
        auto where = std::string(file) + ":" + std::to_string(line);
        if (level >= google::protobuf::LOGLEVEL_FATAL) {
          log::error("protobuf", {{"where", where}, {"detail", message}});
        } else {
          log::debug("protobuf", {{"where", where}, {"detail", message}});
        }
      });
}

Envelope make_error(errc code, std::string_view message) {
  Envelope env;
  auto* e = env.mutable_error();
  e->set_code(to_wire(code));
  e->set_message(std::string(message));
  return env;
}

}  // namespace vigil::proto
