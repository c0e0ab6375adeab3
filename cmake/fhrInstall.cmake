# The installed CMake package: `find_package(fhr CONFIG REQUIRED)` gives
# fhr::runtime (with fhr::model), fhr::bytecode, fhr::interpreter, fhr::executor, fhr::cuda
# where the CUDA backend was built, and fhr::compiler (component
# `compiler`) for tools that compile `.fhr` text in-process. Static
# libraries, position-independent, with their usage requirements; the
# package finds their dependencies itself (docs/embedding.md).
include(CMakePackageConfigHelpers)

set(FHR_INSTALL_CMAKEDIR lib/cmake/fhr CACHE STRING "Where cmake --install puts fhrConfig.cmake")

# Exported names: fhr::runtime rather than fhr::fhr_runtime. fhr_warnings
# travels only as a link-only entry of the static libraries (it carries
# compile options, which consumers never receive).
set_target_properties(fhr_model PROPERTIES EXPORT_NAME model)
set_target_properties(fhr_bytecode PROPERTIES EXPORT_NAME bytecode)
set_target_properties(fhr_runtime PROPERTIES EXPORT_NAME runtime)
set_target_properties(fhr_interpreter PROPERTIES EXPORT_NAME interpreter)
set_target_properties(fhr_executor PROPERTIES EXPORT_NAME executor)
set_target_properties(fhr_warnings PROPERTIES EXPORT_NAME warnings)
install(TARGETS fhr_warnings EXPORT fhr-runtime)
if(TARGET fhr_cuda)
  set_target_properties(fhr_cuda PROPERTIES EXPORT_NAME cuda)
endif()
install(EXPORT fhr-runtime NAMESPACE fhr:: FILE fhrRuntimeTargets.cmake DESTINATION ${FHR_INSTALL_CMAKEDIR})

set(FHR_PACKAGE_HAS_COMPILER OFF)
if(TARGET fhr_compiler)
  set(FHR_PACKAGE_HAS_COMPILER ON)
  set_target_properties(fhr_llvm PROPERTIES EXPORT_NAME llvm)
  set_target_properties(fhr_dsl PROPERTIES EXPORT_NAME dsl)
  set_target_properties(fhr_compiler PROPERTIES EXPORT_NAME compiler)
  install(TARGETS fhr_llvm fhr_dsl fhr_compiler EXPORT fhr-compiler ARCHIVE DESTINATION lib)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/dsl/include/ ${PROJECT_SOURCE_DIR}/compiler/include/
          DESTINATION include)
  install(EXPORT fhr-compiler NAMESPACE fhr:: FILE fhrCompilerTargets.cmake DESTINATION ${FHR_INSTALL_CMAKEDIR})
endif()

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/fhrConfig.cmake.in
  ${PROJECT_BINARY_DIR}/cmake/fhrConfig.cmake INSTALL_DESTINATION ${FHR_INSTALL_CMAKEDIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/cmake/fhrConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/cmake/fhrConfig.cmake ${PROJECT_BINARY_DIR}/cmake/fhrConfigVersion.cmake
        DESTINATION ${FHR_INSTALL_CMAKEDIR})
