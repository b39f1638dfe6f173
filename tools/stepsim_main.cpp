// SPDX-License-Identifier: Apache-2.0
// The stepsim CLI: parse arguments, call the library, print. The only place that maps errors
// to exit codes: 0 ok, 2 bad input, 1 internal error. Subcommands live in cmd_*.cpp.
#include "sim/support/atomic_file.hpp"
#include "sim/support/error.hpp"
#include "tools/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace stepsim;
  CLI::App app{"stepsim: discrete-event simulator of one data-parallel training step"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "stepsim 0.1");
  protect_inputs(true);  // no output is written over a file this process read
  tools::Action action;
  tools::add_run_command(app, action);
  tools::add_collective_commands(app, action);
  tools::add_list_command(app, action);
  tools::add_memory_command(app, action);
  tools::add_calibrate_command(app, action);
  tools::add_sweep_command(app, action);
  tools::add_batch_command(app, action);
  tools::add_compare_command(app, action);
  tools::add_accuracy_command(app, action);
  tools::describe_output_flags(app);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "error: %s (see stepsim --help)\n", e.what());
    return 2;
  }

  try {
    tools::check_output_flags(app);  // before any work: a bad output path fails fast
    return action ? action() : 0;
  } catch (const InputError& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const InternalError& e) {
    std::fprintf(stderr, "internal error (please report): %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
