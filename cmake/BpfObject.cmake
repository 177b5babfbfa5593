# SPDX-License-Identifier: GPL-2.0-only
#
# mysqltrace_bpf_object(<name> <source.bpf.c>)
#
# Compiles a BPF program with clang (CO-RE, against a vmlinux.h generated at
# build time from the running kernel's BTF), generates its libbpf skeleton with
# bpftool, and exposes an INTERFACE target `<name>_skel` whose include path
# holds `<name>.skel.h`. Everything generated stays in the build tree.

find_program(BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)
set(MYSQLTRACE_VMLINUX_BTF "/sys/kernel/btf/vmlinux" CACHE FILEPATH
    "Kernel BTF that vmlinux.h is generated from")

set(_bpf_gen_dir ${CMAKE_BINARY_DIR}/bpf-gen)
file(MAKE_DIRECTORY ${_bpf_gen_dir})

if(NOT EXISTS ${MYSQLTRACE_VMLINUX_BTF})
  message(FATAL_ERROR "mysqltrace: ${MYSQLTRACE_VMLINUX_BTF} not found; the kernel must "
                      "expose BTF (CONFIG_DEBUG_INFO_BTF=y) to build CO-RE programs")
endif()

add_custom_command(
  OUTPUT ${_bpf_gen_dir}/vmlinux.h
  COMMAND ${BPFTOOL} btf dump file ${MYSQLTRACE_VMLINUX_BTF} format c > ${_bpf_gen_dir}/vmlinux.h.tmp
  COMMAND ${CMAKE_COMMAND} -E rename ${_bpf_gen_dir}/vmlinux.h.tmp ${_bpf_gen_dir}/vmlinux.h
  COMMENT "Generating vmlinux.h from ${MYSQLTRACE_VMLINUX_BTF}"
  VERBATIM)
add_custom_target(mysqltrace_vmlinux_h DEPENDS ${_bpf_gen_dir}/vmlinux.h)

function(mysqltrace_bpf_object name source)
  get_filename_component(_src ${source} ABSOLUTE)
  set(_obj ${_bpf_gen_dir}/${name}.bpf.o)
  set(_skel ${_bpf_gen_dir}/${name}.skel.h)
  file(GLOB _bpf_headers CONFIGURE_DEPENDS
       ${PROJECT_SOURCE_DIR}/bpf/*.bpf.h ${PROJECT_SOURCE_DIR}/include/mysqltrace/abi/*.h)
  set(_werror "")
  if(MYSQLTRACE_WERROR)
    set(_werror -Werror)
  endif()
  add_custom_command(
    OUTPUT ${_obj}
    COMMAND ${BPF_CLANG} -g -O2 -target bpf -mcpu=v3 -D__TARGET_ARCH_x86 -Wall ${_werror}
            # The object, with its BTF line info, is embedded in the program:
            # no build paths in it, so that builds are reproducible.
            -ffile-prefix-map=${PROJECT_SOURCE_DIR}=. -ffile-prefix-map=${CMAKE_BINARY_DIR}=build
            -I${_bpf_gen_dir} -I${PROJECT_SOURCE_DIR}/bpf -I${PROJECT_SOURCE_DIR}/include
            -idirafter /usr/include/x86_64-linux-gnu
            -c ${_src} -o ${_obj}
    DEPENDS ${_src} ${_bpf_headers}
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${_skel}
    COMMAND ${BPFTOOL} gen skeleton ${_obj} name ${name} > ${_skel}.tmp
    COMMAND ${CMAKE_COMMAND} -E rename ${_skel}.tmp ${_skel}
    DEPENDS ${_obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${_skel})
  # vmlinux.h comes from another directory's custom command: a file-level
  # DEPENDS across directories is not seen by the Makefile generator.
  add_dependencies(${name}_skel_gen mysqltrace_vmlinux_h)
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${_bpf_gen_dir})
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF mysqltrace_headers)
endfunction()
