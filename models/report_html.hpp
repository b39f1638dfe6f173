// SPDX-License-Identifier: Apache-2.0
// A one-file HTML report of a simulated step (issue 20 item 4): `stepsim run ... --report FILE`.
#pragma once

#include "models/report.hpp"
#include "models/simulate.hpp"
#include "models/sweep.hpp"

#include <string>

namespace stepsim::models {

/// A self-contained HTML page of one simulated step: inline SVG and CSS, no script, nothing
/// fetched. It holds, for rank 0 (and in per_rank mode the slowest rank too):
///  - the headline (scenario, model, hardware, strategy, step time, throughput, MFU), the
///    error band line of the text report and, in per_rank mode, the spread, slowest rank and
///    straggler cost (`id="per-rank"`);
///  - the time breakdown as a stacked bar with its rows (forward, backward, optimizer,
///    framework ops, exposed communication, waiting);
///  - the timeline: one lane per (rank, stream) that ran a task (`<g class="lane"
///    data-lane="rank R stream">`), each task a rectangle coloured by phase with its name and
///    times in a tooltip, the critical path outlined (`class="task critical"`) and the
///    communication no compute hides drawn under the communication lanes (`class="exposed"`);
///  - memory over the step (`<svg id="memory">`): the model states held all step and the
///    activations and buffers on top of them as stacked step curves (allocations at a task's
///    start, frees at its end, as sim::memory_peak counts), the peak marked and the usable HBM
///    drawn as a line, with the memory rows at the peak;
///  - the collectives table (op, size, count, time, algbw, busbw, algorithm) and the warnings.
/// Deterministic: the same inputs give the same bytes.
/// Preconditions: `step` is what run(scenario, step) filled for `report`.
std::string report_html(const Report& report, const SimulatedStep& step);

/// A self-contained HTML page of a sweep (`stepsim sweep ... --report FILE`): the grid, the
/// best point, and its curves as inline SVG charts (`<svg class="chart">`, one `<path
/// class="series">` per curve):
///  - a bucket sweep: step time and exposed communication against bucket_cap_mb per curve, with
///    seed 000 §4's regimes shaded (`<rect class="regime latency-bound|sweet-spot|last-bucket">`);
///  - a DP sweep (two dp values or more): scaling efficiency against dp per curve with the 90 % line;
///  - otherwise: the metric against the first axis, one line per value of the other axes;
/// and the points' table (the first 200; the CSV and JSON have all). The first six curves of a
/// kind are drawn; the page says how many more there are.
/// Deterministic: the same inputs give the same bytes.
std::string sweep_html(const SweepResult& result, const SweepSummary& summary);

}  // namespace stepsim::models
