// SPDX-License-Identifier: Apache-2.0
// Catch2 main for stepsim_unit_tests.
#define CATCH_CONFIG_MAIN
#include "tests/support/catch.hpp"
