#include "common/errors.hpp"

namespace vigil {
namespace {

class VigilCategory final : public boost::system::error_category {
 public:
  const char* name() const noexcept override { return "vigil"; }
  std::string message(int ev) const override {
    switch (static_cast<errc>(ev)) {
      case errc::ok: return "success";
      case errc::not_found: return "not found";
      case errc::corruption: return "data is corrupt";
      case errc::io_error: return "input/output error";
      case errc::invalid_argument: return "invalid argument";
      case errc::admission_refused: return "admission refused";
      case errc::deadline_missed: return "deadline missed";
      case errc::profile_stale: return "disk profile is stale";
      case errc::frame_too_large: return "frame exceeds the maximum frame size";
      case errc::truncated_frame: return "connection closed in the middle of a frame";
      case errc::malformed_frame: return "malformed frame";
      case errc::unknown_message: return "unknown message type";
      case errc::unsupported: return "request not supported by this server";
      case errc::unauthenticated: return "not authenticated";
      case errc::permission_denied: return "permission denied";
      case errc::unavailable: return "service unavailable";
      case errc::schema_too_new: return "catalog schema is newer than this binary";
      case errc::busy: return "in use by another process";
      case errc::rate_exceeded: return "more data than the admitted rate allows in this cycle";
      case errc::frame_exceeds_buffer: return "media frame larger than the stream's cycle buffer";
    }
    return "unknown vigil error";
  }
};

}  // namespace

const boost::system::error_category& vigil_category() noexcept {
  static const VigilCategory category;
  return category;
}

const char* errc_name(errc e) noexcept {
  switch (e) {
    case errc::ok: return "ok";
    case errc::not_found: return "not_found";
    case errc::corruption: return "corruption";
    case errc::io_error: return "io_error";
    case errc::invalid_argument: return "invalid_argument";
    case errc::admission_refused: return "admission_refused";
    case errc::deadline_missed: return "deadline_missed";
    case errc::profile_stale: return "profile_stale";
    case errc::frame_too_large: return "frame_too_large";
    case errc::truncated_frame: return "truncated_frame";
    case errc::malformed_frame: return "malformed_frame";
    case errc::unknown_message: return "unknown_message";
    case errc::unsupported: return "unsupported";
    case errc::unauthenticated: return "unauthenticated";
    case errc::permission_denied: return "permission_denied";
    case errc::unavailable: return "unavailable";
    case errc::schema_too_new: return "schema_too_new";
    case errc::busy: return "busy";
    case errc::rate_exceeded: return "rate_exceeded";
    case errc::frame_exceeds_buffer: return "frame_exceeds_buffer";
  }
  return "unknown";
}

}  // namespace vigil
