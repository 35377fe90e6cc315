#include "bench/benches.hpp"

namespace vigil::bench {

const std::map<std::string, BenchEntry>& registry() {
  static const std::map<std::string, BenchEntry> table{
      {"admission",
       {"thesis Table 3.5 on the simulated WD400BB: MaxN vs what each policy admits; Figs. 3.28/3.29",
        admission_bench}},
      {"store", {"N streams written through the storage engine vs a plain O_DIRECT writer", store_bench}},
      {"latency-map",
       {"seed 004 on the simulated ST373207LW: throughput vs queue length by LBN and by map (Fig. 5), "
        "EDF vs G-MATRIX deadline classes (Table II)",
        latency_map_bench}},
      {"failover",
       {"kill -9 of the node recording the most cameras, R times: recording resumes elsewhere (p50/p99) beside "
        "Milestone and Nx Witness",
        failover_bench}},
      {"freeblock",
       {"seeds 003/000 on the simulated Atlas 10K: rotational share of head time by order (Figs. 2, 5, 6), "
        "free bandwidth of a whole-disk scan under OLTP (Fig. 8)",
        freeblock_bench}},
      {"preempt", {"Semi-preemptible IO on the simulated ST318437LW: thesis Tables 4.2-4.4", preempt_bench}},
      {"ingest",
       {"K pre-encoded streams replayed at real time into vigild: streams sustained, CPU per Gbit/s", ingest_bench}},
      {"query",
       {"HTTP timeline queries on a seeded catalog: 1 camera x 30 days, 256 cameras x 24 h (p95)", query_bench}},
      {"export",
       {"seek/export time to first byte (p95) while recording at full admitted load vs unloaded", export_bench}},
      {"crash",
       {"SIGKILL of vigild while 16 cameras record over three volumes: frames lost, restart time, gap", crash_bench}},
      {"freshness",
       {"durable ack -> frame exportable (p50/p99) at 1, 32, 256 real-time streams vs the 2 s target and the peers",
        freshness_bench}},
      {"interactive",
       {"64 KiB interactive reads under admitted recording load vs page-cache writers", interactive_bench}},
      {"rtsp",
       {"K simulated RTSP cameras pulled by vigild vs MediaMTX: CPU per Gbit/s, memory per camera, add latency, gaps",
        rtsp_bench}},
  };
  return table;
}

}  // namespace vigil::bench
