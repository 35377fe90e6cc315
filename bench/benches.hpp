#pragma once
// The benchmarks `vigil bench NAME` knows (bench/registry.cpp lists them with a summary).
#include "bench/bench.hpp"

namespace vigil::bench {

BenchReport admission_bench(const BenchOptions& options);    // bench/admission_bench.cpp
BenchReport store_bench(const BenchOptions& options);        // bench/store_bench.cpp
BenchReport preempt_bench(const BenchOptions& options);      // bench/preempt_bench.cpp
BenchReport latency_map_bench(const BenchOptions& options);  // bench/latency_map_bench.cpp
BenchReport failover_bench(const BenchOptions& options);     // bench/failover_bench.cpp
BenchReport freeblock_bench(const BenchOptions& options);    // bench/freeblock_bench.cpp
BenchReport interactive_bench(const BenchOptions& options);  // bench/interactive_bench.cpp
BenchReport ingest_bench(const BenchOptions& options);       // bench/ingest_bench.cpp
BenchReport query_bench(const BenchOptions& options);        // bench/query_bench.cpp
BenchReport export_bench(const BenchOptions& options);       // bench/export_bench.cpp
BenchReport crash_bench(const BenchOptions& options);        // bench/crash_bench.cpp
BenchReport freshness_bench(const BenchOptions& options);    // bench/freshness_bench.cpp
BenchReport rtsp_bench(const BenchOptions& options);         // bench/rtsp_bench.cpp

}  // namespace vigil::bench
