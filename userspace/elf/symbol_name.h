// SPDX-License-Identifier: GPL-2.0-only
// Names of functions as people read them, from ELF symbols.
#pragma once

#include <string>
#include <string_view>

namespace mysqltrace::elf {

// The demangled form of a C++ symbol (abi::__cxa_demangle); other names
// (C functions) unchanged.
std::string demangle(const std::string &symbol);

// A demangled name without its parameter list and qualifiers:
// "ns::Foo::bar(int) const" -> "ns::Foo::bar", "operator()(int)" ->
// "operator()", "(anonymous namespace)::f()" -> "(anonymous namespace)::f",
// "f(int) [clone .isra.0]" -> "f". Names without a list come back unchanged.
std::string without_params(std::string_view demangled);

}  // namespace mysqltrace::elf
