#pragma once
// Vigil's one error category.
//
// Error policy, by layer (STYLE.md, "errors are values"):
//  - storage/, proto/ decoding, admission/ and everything on the IO-thread or network hot
//    path return `vigil::Result<T>` (boost::system::result) and are noexcept;
//  - start-up, configuration and catalog (libpqxx) code throws; the exception is caught at
//    the top of vigild / vigil and printed as one line.
#include <boost/system/error_code.hpp>
#include <boost/system/result.hpp>
#include <string>
#include <type_traits>

namespace vigil {

enum class errc {
  ok = 0,
  not_found,
  corruption,
  io_error,
  invalid_argument,
  admission_refused,
  deadline_missed,
  profile_stale,
  frame_too_large,    // a wire frame larger than the negotiated maximum
  truncated_frame,    // the peer closed mid-frame
  malformed_frame,    // bytes that do not parse as a frame
  unknown_message,    // a frame whose message type this build does not know
  unsupported,        // a known request this server does not serve
  unauthenticated,
  permission_denied,
  unavailable,        // a dependency (database, disk) is down
  schema_too_new,     // the catalog was written by a newer Vigil
  busy,               // held by another process (a volume another vigild or fsck has open)
  rate_exceeded,      // a recorder sent more than its admitted rate allows this cycle
};

const boost::system::error_category& vigil_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept {
  return {static_cast<int>(e), vigil_category()};
}

template <class T>
using Result = boost::system::result<T, boost::system::error_code>;

// Stable short name of a code ("frame_too_large"), used in logs and on the wire.
const char* errc_name(errc e) noexcept;

}  // namespace vigil

template <>
struct boost::system::is_error_code_enum<vigil::errc> : std::true_type {};
