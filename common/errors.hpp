#pragma once
// Vigil's one error category.
//
// Error policy, by layer (STYLE.md, "errors are values"):
//  - storage/, proto/ decoding and everything on the IO-thread or network hot path return
//    `vigil::Result<T>` (boost::system::result) and are noexcept;
//  - admission/: a refusal is a decision, not an error. AdmissionController::decide returns a
//    Decision, admitted or refused with a typed RefuseCause, a reason for people and the
//    largest rate that would fit; the online model check and calibration cannot fail. Its
//    tool and start-up side throws: the profiler std::runtime_error for a device it cannot
//    measure, profile_from_json std::invalid_argument for a malformed document (vigild does
//    not start on it, `vigil profile` prints it);
//  - start-up, configuration and catalog (libpqxx) code throws; the exception is caught at
//    the top of vigild / vigil and printed as one line. The catalog throws
//    catalog::CatalogError (invalid, not_found, conflict) for input it refuses, so that a
//    caller can tell its client's mistake from a failure of its own;
//  - the HTTP API: routes throw server::ApiError; one table (server/net/api_error.hpp) maps
//    it and CatalogError to a 4xx, and anything else to a 5xx that is logged.
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
  frame_too_large,  // a wire frame larger than the negotiated maximum
  truncated_frame,  // the peer closed mid-frame
  malformed_frame,  // bytes that do not parse as a frame
  unknown_message,  // a frame whose message type this build does not know
  unsupported,      // a known request this server does not serve
  unauthenticated,
  permission_denied,
  unavailable,           // a dependency (database, disk) is down
  schema_too_new,        // the catalog was written by a newer Vigil
  busy,                  // held by another process (a volume another vigild or fsck has open)
  rate_exceeded,         // a recorder sent more than its admitted rate allows this cycle
  frame_exceeds_buffer,  // a media frame larger than its stream's cycle buffer: no cycle can ever take it
};

const boost::system::error_category& vigil_category() noexcept;

inline boost::system::error_code make_error_code(errc e) noexcept { return {static_cast<int>(e), vigil_category()}; }

template <class T>
using Result = boost::system::result<T, boost::system::error_code>;

// Stable short name of a code ("frame_too_large"), used in logs and on the wire.
const char* errc_name(errc e) noexcept;

}  // namespace vigil

template <>
struct boost::system::is_error_code_enum<vigil::errc> : std::true_type {};
