// SPDX-License-Identifier: GPL-2.0-only
// C++ exceptions through traced calls, for `mysqltrace calls` tests. Prints
// "ready", then per line read from stdin:
//   throw  cx_catcher(1): cx_catcher -> cx_middle -> cx_thrower throws,
//          cx_catcher catches and returns -5; then cx_catcher(0) returns 1
//   walk   cx_walker -> backtrace() (an unwinder walking the stack)
// and answers "done <line> <results>". A return probe left in the way of the
// unwinder would make the throw end in std::terminate.
#include <execinfo.h>

#include <iostream>
#include <stdexcept>
#include <string>

extern "C" {

__attribute__((noinline)) int cx_thrower(int x) {
    if (x > 0) {
        throw std::runtime_error("boom");
    }
    return x;
}

__attribute__((noinline)) int cx_middle(int x) {
    return cx_thrower(x) + 1;
}

__attribute__((noinline)) int cx_catcher(int x) {
    try {
        return cx_middle(x);
    } catch (const std::exception &) {
        return -5;
    }
}

__attribute__((noinline)) int cx_walker() {
    void *frames[32];
    return backtrace(frames, 32);
}
}

int main() {
    std::string line;
    std::cout << "ready" << std::endl;
    while (std::getline(std::cin, line)) {
        if (line == "throw") {
            int a = cx_catcher(1);
            int b = cx_catcher(0);
            std::cout << "done throw " << a << " " << b << std::endl;
        } else if (line == "walk") {
            int n = cx_walker();
            std::cout << "done walk " << (n > 2 ? "ok" : "short") << std::endl;
        }
    }
    return 0;
}
