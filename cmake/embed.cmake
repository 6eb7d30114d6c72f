# Turns a text file into a C translation unit defining one string, so the
# binary carries schema.sql and never reads it from disk at run time.
file(READ ${IN} content HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
file(WRITE ${OUT} "/* generated from schema/schema.sql, do not edit */\n#include <stddef.h>\nconst char slabtap_schema_sql[] = {${content} 0x00};\nconst size_t slabtap_schema_sql_len = sizeof(slabtap_schema_sql) - 1;\n")
