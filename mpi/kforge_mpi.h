/* libkforge_mpi.so: the whole of kforge's use of MPI, behind a small C interface.
 *
 * kforge runs across hosts under mpirun or srun (evaluator/gpu_service.hpp), but a plain `kforge
 * optimize` must not touch MPI, and the binary must start on machines without an MPI library. So
 * the MPI calls live in this shared library, built only when CMake finds MPI, placed beside the
 * kforge binary and loaded with dlopen (util/mpi_world.hpp) only when the environment says an MPI
 * launcher started the process. Nothing but util/mpi_world.cpp calls these functions, and it calls
 * them all from one thread: MPI is initialised with MPI_THREAD_FUNNELED.
 *
 * Transfers are nonblocking (MPI_Isend, MPI_Improbe + MPI_Imrecv, MPI_Test), so a caller never
 * blocks on a peer that has died; MPI_COMM_WORLD's error handler is MPI_ERRORS_RETURN, so a failed
 * call is reported, not fatal. Requests and matched messages are named by integer handles. Every
 * function returns 0 on success or an MPI error code, which kforge_mpi_error_text describes. */
#ifndef KFORGE_MPI_H
#define KFORGE_MPI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KFORGE_MPI_ABI_VERSION 1

typedef struct kforge_mpi_world {
    int rank, size;             /* in MPI_COMM_WORLD */
    int local_rank, local_size; /* among the ranks of this host (MPI_COMM_TYPE_SHARED) */
    int thread_level;           /* what MPI_Init_thread provided */
    char processor[256];        /* MPI_Get_processor_name */
    char library[512];          /* MPI_Get_library_version, first line */
} kforge_mpi_world;

int kforge_mpi_abi_version(void);
/* MPI_Init_thread(FUNNELED), MPI_ERRORS_RETURN on MPI_COMM_WORLD, then the world's facts. */
int kforge_mpi_init(kforge_mpi_world* world);
/* Starts sending `size` bytes (the buffer must stay valid until the request completes). */
int kforge_mpi_isend(int dest, int tag, const void* data, size_t size, int64_t* request);
/* Sets *done when the request has completed, and releases it then. */
int kforge_mpi_test(int64_t request, int* done);
/* Lets go of a request that will never be waited for (a send to or receive from a lost peer);
 * its buffer must stay valid, since MPI may still use it. */
void kforge_mpi_abandon(int64_t request);
/* Looks for an incoming message from any rank; when there is one, *found is 1 and its source, tag,
 * size and a matched-message handle are set. */
int kforge_mpi_probe(int* found, int* source, int* tag, size_t* size, int64_t* message);
/* Starts receiving a matched message into `data` (which holds its size). */
int kforge_mpi_receive(int64_t message, void* data, size_t size, int64_t* request);
int kforge_mpi_finalize(void);
void kforge_mpi_error_text(int code, char* text, size_t size);

#ifdef __cplusplus
}
#endif

#endif
