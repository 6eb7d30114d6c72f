# Turns a text file into a C translation unit defining one string, so the
# binary carries schema.sql and never reads it from disk at run time.
# NAME: the C symbol (default slabtap_schema_sql; the derived
# build/schema/pg/schema.sql is embedded as slabtap_pg_schema_sql).
if(NOT NAME)
  set(NAME slabtap_schema_sql)
endif()
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE ${OUT} "/* generated from ${IN}, do not edit */\n#include <stddef.h>\nconst char ${NAME}[] = {${content} 0x00};\nconst size_t ${NAME}_len = sizeof(${NAME}) - 1;\n")
