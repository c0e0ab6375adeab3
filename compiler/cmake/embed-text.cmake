# Writes the file INPUT as a C++ raw string literal to OUTPUT, so that a
# document can be compiled into a program (cmake -DINPUT=... -DOUTPUT=... -P).
file(READ "${INPUT}" content)
file(WRITE "${OUTPUT}.tmp" "R\"fhrdoc(${content})fhrdoc\"\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
