# The man pages, in two steps.
#
# 1. Build time (MODE=help): reads a hand-written page (dist/slabtap.1.in,
#    dist/slabtap.7.in) and writes it with
#      - each line "@HELP@" / "@HELP COMMAND [SUB]@" replaced by the binary's
#        own `slabtap [COMMAND [SUB]] --help`, verbatim: options cannot drift
#        from what slabtap accepts. Every command `slabtap --help` lists and
#        every subcommand `slabtap model --help` lists must have its line, or
#        the build fails: a new command cannot go undocumented;
#      - the line "@METRICS@" replaced by every family /metrics declares,
#        read from the sources (proxy/server/metrics.h's X-macro and the
#        families declared in proxy/server/*.c), with its help text;
#      - @VERSION@.
#    cmake -DMODE=help -DIN=dist/slabtap.1.in -DOUT=slabtap.1.tmpl -DSLABTAP=bin
#          -DSRC=source-dir -DVERSION=0.1.0 -P dist/manpage.cmake
# 2. Install time (MODE=paths): @PREFIX@ @BINDIR@ @DATADIR@ @SYSCONFDIR@
#    replaced by the absolute paths of the prefix installed to, so FILES names
#    the real paths whatever --prefix was given.
#    cmake -DMODE=paths -DIN=slabtap.1.tmpl -DOUT=slabtap.1 -DPREFIX=/usr
#          [-DBINDIR=bin -DDATADIR=share -DSYSCONFDIR=etc] -P dist/manpage.cmake
cmake_minimum_required(VERSION 3.16)
if(NOT IN OR NOT OUT OR NOT MODE)
  message(FATAL_ERROR "usage: cmake -DMODE=help|paths -DIN=FILE -DOUT=FILE ... -P manpage.cmake")
endif()
file(READ ${IN} page)

if(MODE STREQUAL "paths")
  if(NOT DEFINED PREFIX)
    message(FATAL_ERROR "MODE=paths needs -DPREFIX")
  endif()
  string(REGEX REPLACE "/+$" "" PREFIX "${PREFIX}")
  foreach(d BINDIR DATADIR SYSCONFDIR)
    if(NOT DEFINED ${d})
      set(${d} "")
    endif()
  endforeach()
  if(BINDIR STREQUAL "")
    set(BINDIR bin)
  endif()
  if(DATADIR STREQUAL "")
    set(DATADIR share)
  endif()
  if(SYSCONFDIR STREQUAL "")
    set(SYSCONFDIR etc)
  endif()
  # relative dirs are under the prefix; SYSCONFDIR as GNUInstallDirs places
  # it: /etc for the prefixes / and /usr, /etc/opt/NAME for /opt/NAME
  foreach(d BINDIR DATADIR SYSCONFDIR)
    if(NOT IS_ABSOLUTE "${${d}}")
      if(d STREQUAL "SYSCONFDIR" AND (PREFIX STREQUAL "" OR PREFIX STREQUAL "/usr"))
        set(${d} "/${${d}}")
      elseif(d STREQUAL "SYSCONFDIR" AND PREFIX MATCHES "^/opt/")
        set(${d} "/etc${PREFIX}")
      else()
        set(${d} "${PREFIX}/${${d}}")
      endif()
    endif()
  endforeach()
  set(shown_prefix "${PREFIX}")
  if(shown_prefix STREQUAL "")
    set(shown_prefix "/")
  endif()
  foreach(pair "PREFIX;${shown_prefix}" "BINDIR;${BINDIR}" "DATADIR;${DATADIR}"
               "SYSCONFDIR;${SYSCONFDIR}")
    list(GET pair 0 key)
    list(GET pair 1 value)
    string(REPLACE "@${key}@" "${value}" page "${page}")
  endforeach()
  file(WRITE ${OUT} "${page}")
  return()
endif()

if(NOT MODE STREQUAL "help" OR NOT SLABTAP)
  message(FATAL_ERROR "MODE=help needs -DSLABTAP=BIN")
endif()

function(help_of out_var)
  execute_process(COMMAND ${SLABTAP} ${ARGN} --help
                  OUTPUT_VARIABLE text ERROR_VARIABLE err RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "slabtap ${ARGN} --help exited ${rc}: ${err}")
  endif()
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# roff-safe verbatim text: backslashes, and lines that would read as requests
function(roff_verbatim out_var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REGEX REPLACE "(^|\n)([.'])" "\\1\\\\&\\2" text "${text}")
  string(REGEX REPLACE "\n+$" "" text "${text}")
  set(${out_var} ".nf\n${text}\n.fi\n" PARENT_SCOPE)
endfunction()

# roff-safe running text (help strings of metrics)
function(roff_text out_var text)
  string(REPLACE "\\" "\\e" text "${text}")
  string(REPLACE "-" "\\-" text "${text}")
  string(REGEX REPLACE "^([.'])" "\\\\&\\1" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# "  NAME   description" lines after a "HEADER:" line
function(listed out_var text header)
  string(REPLACE "\n" ";" lines "${text}")
  set(on FALSE)
  set(names "")
  foreach(line IN LISTS lines)
    if(line STREQUAL "${header}:")
      set(on TRUE)
    elseif(on AND line MATCHES "^  ([a-z]+) ")
      list(APPEND names ${CMAKE_MATCH_1})
    elseif(on AND NOT line MATCHES "^  ")
      set(on FALSE)
    endif()
  endforeach()
  set(${out_var} ${names} PARENT_SCOPE)
endfunction()

# C source as one line per statement for the regexes below: adjacent string
# literals joined, line continuations gone, and ';' and brackets stood in
# for by ASCII 2, 3, 4 (CMake lists split at the one and nest at the others;
# c_unflat puts them back).
string(ASCII 2 semi)
string(ASCII 3 lbr)
string(ASCII 4 rbr)
function(c_flat out_var text)
  string(REGEX REPLACE "\\\\\n" " " text "${text}")
  string(REGEX REPLACE "\"[ \t\n]+\"" "" text "${text}")
  string(REPLACE ";" "${semi}" text "${text}")
  string(REPLACE "[" "${lbr}" text "${text}")
  string(REPLACE "]" "${rbr}" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()
function(c_unflat out_var text)
  string(REPLACE "${semi}" ";" text "${text}")
  string(REPLACE "${lbr}" "[" text "${text}")
  string(REPLACE "${rbr}" "]" text "${text}")
  set(${out_var} "${text}" PARENT_SCOPE)
endfunction()

# Every /metrics family, from the sources: NAME, TYPE and HELP joined by the
# character ${sep} (ASCII 1), metrics.h's X-macro first, then the families
# declared by name.
string(ASCII 1 sep)
function(metric_families out_var src)
  set(fams "")
  # proxy/server/metrics.h: SLABTAP_METRICS' X(name, counter|gauge, one|us,
  # "help") entries, served as slabtap_NAME (us: _seconds; counters: _total),
  # and the memcached tables' X(NAME, counter|gauge, "stats field"|NULL,
  # "help") entries, served under their own names
  file(READ ${src}/proxy/server/metrics.h h)
  c_flat(h "${h}")
  string(REGEX MATCHALL "X\\([a-z_0-9]+, *(counter|gauge), *(one|us), *\"[^\"]*\"\\)" xs "${h}")
  string(REGEX MATCHALL "X\\([a-z_0-9]+, *(counter|gauge), *(\"[^\"]*\"|NULL), *\"[^\"]*\"\\)" ms "${h}")
  string(REGEX MATCHALL "X\\([a-z_0-9]+, *(counter|gauge)," all_x "${h}")
  list(LENGTH xs n_x)
  list(LENGTH ms n_m)
  list(LENGTH all_x n_all)
  math(EXPR n_read "${n_x} + ${n_m}")
  if(NOT n_read EQUAL n_all OR n_x EQUAL 0)
    message(FATAL_ERROR "metrics.h: read ${n_read} of ${n_all} X(...) entries; "
                        "update metric_families in dist/manpage.cmake")
  endif()
  foreach(x IN LISTS xs)
    string(REGEX MATCH "X\\(([a-z_0-9]+), *(counter|gauge), *(one|us), *\"([^\"]*)\"\\)" _ "${x}")
    set(name "slabtap_${CMAKE_MATCH_1}")
    if(CMAKE_MATCH_3 STREQUAL "us")
      string(APPEND name "_seconds")
    endif()
    if(CMAKE_MATCH_2 STREQUAL "counter")
      string(APPEND name "_total")
    endif()
    list(APPEND fams "${name}${sep}${CMAKE_MATCH_2}${sep}${CMAKE_MATCH_4}")
  endforeach()
  foreach(x IN LISTS ms)
    string(REGEX MATCH "X\\(([a-z_0-9]+), *(counter|gauge), *(\"[^\"]*\"|NULL), *\"([^\"]*)\"\\)" _ "${x}")
    list(APPEND fams "${CMAKE_MATCH_1}${sep}${CMAKE_MATCH_2}${sep}${CMAKE_MATCH_4}")
  endforeach()
  # help texts metrics.h defines by name (#define NAME_HELP "help"), put
  # in where a .c names them
  string(REGEX MATCHALL "#define +[A-Z_0-9]+_HELP +\"[^\"]*\"" helps "${h}")
  # families declared by name in proxy/server/*.c: prom_declare(w, "NAME",
  # PROM_TYPE, "help") calls and { "NAME", PROM_TYPE, "help" ... } tables
  file(GLOB cs ${src}/proxy/server/*.c)
  list(SORT cs)
  foreach(c IN LISTS cs)
    file(READ ${c} t)
    c_flat(t "${t}")
    foreach(hd IN LISTS helps)
      string(REGEX MATCH "#define +([A-Z_0-9]+_HELP) +(\"[^\"]*\")" _ "${hd}")
      string(REGEX REPLACE "PROM_([A-Z]+),[ \t\n]*${CMAKE_MATCH_1}\\)" "PROM_\\1, ${CMAKE_MATCH_2})"
             t "${t}")
    endforeach()
    string(REGEX MATCHALL "\"[a-z_0-9]+\",[ \t\n]*PROM_[A-Z]+,[ \t\n]*\"[^\"]*\"" ds "${t}")
    string(REGEX MATCHALL "\"[a-z_0-9]+\",[ \t\n]*PROM_(COUNTER|GAUGE)" all_ds "${t}")
    list(LENGTH ds n_d)
    list(LENGTH all_ds n_alld)
    if(NOT n_d EQUAL n_alld)
      message(FATAL_ERROR "${c}: read ${n_d} of ${n_alld} metric families; "
                          "update metric_families in dist/manpage.cmake")
    endif()
    foreach(d IN LISTS ds)
      string(REGEX MATCH "\"([a-z_0-9]+)\",[ \t\n]*PROM_([A-Z]+),[ \t\n]*\"([^\"]*)\"" _ "${d}")
      string(TOLOWER "${CMAKE_MATCH_2}" type)
      list(APPEND fams "${CMAKE_MATCH_1}${sep}${type}${sep}${CMAKE_MATCH_3}")
    endforeach()
  endforeach()
  set(${out_var} "${fams}" PARENT_SCOPE)
endfunction()

string(REPLACE "@VERSION@" "${VERSION}" page "${page}")
# marker lines, one at a time (the page is never split into a CMake list:
# roff's brackets and semicolons would not survive it)
set(out "")
set(rest "${page}")
set(seen "")
while(TRUE)
  string(REGEX MATCH "(^|\n)(@HELP( [a-z ]+)?@|@METRICS@)(\n|$)" m "${rest}")
  if(NOT m)
    break()
  endif()
  set(marker "${CMAKE_MATCH_2}")
  set(cmd "${CMAKE_MATCH_3}")
  string(FIND "${rest}" "${m}" pos)
  string(LENGTH "${m}" mlen)
  math(EXPR next "${pos} + ${mlen}")
  string(SUBSTRING "${rest}" 0 ${pos} before)
  string(SUBSTRING "${rest}" ${next} -1 rest)
  string(APPEND out "${before}")
  if(m MATCHES "^\n")
    string(APPEND out "\n")
  endif()
  if(marker STREQUAL "@METRICS@")
    if(NOT SRC)
      message(FATAL_ERROR "@METRICS@ needs -DSRC=source-dir")
    endif()
    metric_families(fams ${SRC})
    foreach(f IN LISTS fams)
      string(REPLACE "${sep}" ";" parts "${f}")
      list(GET parts 0 name)
      list(GET parts 1 type)
      list(GET parts 2 help)
      c_unflat(help "${help}")
      roff_text(help "${help}")
      string(APPEND out ".TP\n.BR ${name} \" (${type})\"\n${help}\n")
    endforeach()
  else()
    string(STRIP "${cmd}" cmd)
    separate_arguments(args UNIX_COMMAND "${cmd}")
    help_of(h ${args})
    roff_verbatim(v "${h}")
    string(APPEND out "${v}")
    list(APPEND seen "${cmd}")
  endif()
endwhile()
string(APPEND out "${rest}")

# every command and model subcommand has its @HELP line (slabtap.1 only)
if(page MATCHES "@HELP@")
  help_of(top)
  listed(commands "${top}" commands)
  if(NOT commands)
    message(FATAL_ERROR "no commands found in `slabtap --help`")
  endif()
  foreach(c IN LISTS commands)
    if(NOT "${c}" IN_LIST seen)
      message(FATAL_ERROR "${IN}: command '${c}' has no '@HELP ${c}@' line: describe it")
    endif()
    help_of(h ${c})
    listed(subs "${h}" subcommands)
    foreach(s IN LISTS subs)
      if(NOT "${c} ${s}" IN_LIST seen)
        message(FATAL_ERROR "${IN}: '${c} ${s}' has no '@HELP ${c} ${s}@' line: describe it")
      endif()
    endforeach()
  endforeach()
endif()
file(WRITE ${OUT} "${out}")
