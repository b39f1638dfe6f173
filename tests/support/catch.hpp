// SPDX-License-Identifier: Apache-2.0
// One include point for Catch2: v3 when present, else v2 (Debian 12 ships 2.13).
#pragma once
#if __has_include(<catch2/catch_all.hpp>)
#include <catch2/catch_all.hpp>
#else
#include <catch2/catch.hpp>
#endif
