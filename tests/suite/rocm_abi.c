// What the installed HIP headers make of every size, offset and value src/native/hip_api.rs
// declares by hand: one "name value" line each, named as rocm::declared_abi() names them
// (tests/suite/rocm.rs compiles this with the C compiler and compares).
#include <hip/hip_runtime_api.h>
#include <hip/hiprtc.h>
#include <stddef.h>
#include <stdio.h>

#if HIP_VERSION_MAJOR >= 6
// ROCm 6 and 7 call the layout the exported hipGetDeviceProperties fills hipDeviceProp_tR0000.
#include <hip/hip_deprecated.h>
typedef hipDeviceProp_tR0000 props;
#else
typedef hipDeviceProp_t props;
#endif

#define SHOW(name, value) printf("%s %lld\n", name, (long long)(value))
#define FIELD(f) SHOW("offsetof(" #f ")", offsetof(props, f))

int main(void) {
  SHOW("sizeof(hipDeviceProp_tR0000)", sizeof(props));
  SHOW("alignof(hipDeviceProp_tR0000)", _Alignof(props));
  FIELD(name);
  FIELD(totalGlobalMem);
  FIELD(warpSize);
  FIELD(multiProcessorCount);
  FIELD(maxSharedMemoryPerMultiProcessor);
  FIELD(gcnArchName);
  FIELD(integrated);
  FIELD(pageableMemoryAccessUsesHostPageTables);
  SHOW("sizeof(hipError_t)", sizeof(hipError_t));
  SHOW("hipSuccess", hipSuccess);
  SHOW("hipErrorNoDevice", hipErrorNoDevice);
  SHOW("sizeof(hipMemcpyKind)", sizeof(hipMemcpyKind));
  SHOW("hipMemcpyHostToDevice", hipMemcpyHostToDevice);
  SHOW("hipMemcpyDeviceToHost", hipMemcpyDeviceToHost);
  SHOW("hipMemcpyDeviceToDevice", hipMemcpyDeviceToDevice);
  SHOW("hipStreamNonBlocking", hipStreamNonBlocking);
  SHOW("hipStreamCaptureModeRelaxed", hipStreamCaptureModeRelaxed);
  SHOW("sizeof(hiprtcResult)", sizeof(hiprtcResult));
  SHOW("HIPRTC_SUCCESS", HIPRTC_SUCCESS);
  return 0;
}
