# Copies the generated Markdown docs (SRC) into the source tree (DST).
file(GLOB_RECURSE docs RELATIVE ${SRC} ${SRC}/*.md)
foreach(doc ${docs})
  get_filename_component(dir ${DST}/${doc} DIRECTORY)
  file(MAKE_DIRECTORY ${dir})
  file(COPY_FILE ${SRC}/${doc} ${DST}/${doc} ONLY_IF_DIFFERENT)
endforeach()
