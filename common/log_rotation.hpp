#pragma once
// Size-bounded rotation of a log that another process appends to through a descriptor it keeps
// (an ingest worker's stdout and stderr, opened O_APPEND by vigild: common/child_process.hpp).
// The file cannot be renamed away (the writer would go on writing into the renamed file), so its
// bytes are copied: PATH's oldest bytes go to PATH.1 (PATH.1 → PATH.2 …, the oldest dropped beyond
// KEEP), then are cut from the front of PATH. On a file system that can collapse a range
// (fallocate FALLOC_FL_COLLAPSE_RANGE: ext4, XFS) the cut is atomic against the writer's appends,
// and no line is lost; elsewhere (tmpfs, …) PATH is truncated after the copy, and what the writer
// appended between the copy and the truncation — microseconds' worth — is lost, which the result
// says. The writer's O_APPEND makes its next write land at the new end: no hole of zeros.
// Thread: any; one rotator per file. Errors: returned (a log that cannot be rotated must not stop
// the recording it describes).
#include <cstdint>
#include <filesystem>
#include <string>

namespace vigil {

struct LogRotationLimits {
  std::uint64_t max_bytes = 16u << 20;  // PATH is rotated once it is larger than this
  int keep = 4;                         // rotated files kept: PATH.1 (newest) … PATH.KEEP
};

enum class LogRotated {
  no,         // PATH is within max_bytes (or missing)
  lossless,   // rotated; the front cut by collapsing the range
  truncated,  // rotated; PATH truncated after the copy (lines appended meanwhile may be lost)
  failed,     // not rotated (or only partly): see error
};

struct LogRotationResult {
  LogRotated outcome = LogRotated::no;
  std::uint64_t moved_bytes = 0;  // bytes that went to PATH.1
  std::string error;              // for failed: what went wrong, with the path
};

// Rotates PATH if it is larger than LIMITS.max_bytes.
LogRotationResult rotate_log_if_large(const std::filesystem::path& path, const LogRotationLimits& limits);

}  // namespace vigil
