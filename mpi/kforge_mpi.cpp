// libkforge_mpi.so: the MPI calls behind kforge_mpi.h.
//
// MPI's handles (MPI_Request, MPI_Message) have implementation-defined types, so the interface
// names them by indices into tables kept here; freed entries are reused. Every call comes from the
// one thread util/mpi_world.cpp runs MPI on, so the tables need no lock.
#include "kforge_mpi.h"

#include <climits>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <vector>

#include <mpi.h>

namespace {

template <typename Handle>
class HandleTable
{
public:
    explicit HandleTable(Handle null) : m_null(null) {}
    int64_t add(Handle handle)
    {
        for (size_t i = 0; i < m_handles.size(); ++i)
            if (m_handles[i] == m_null) {
                m_handles[i] = handle;
                return static_cast<int64_t>(i);
            }
        m_handles.push_back(handle);
        return static_cast<int64_t>(m_handles.size() - 1);
    }
    Handle* at(int64_t index)
    {
        if (index < 0 || static_cast<size_t>(index) >= m_handles.size() || m_handles[static_cast<size_t>(index)] == m_null)
            return nullptr;
        return &m_handles[static_cast<size_t>(index)];
    }
    void release(int64_t index)
    {
        if (Handle* handle = at(index))
            *handle = m_null;
    }

private:
    Handle m_null;
    std::vector<Handle> m_handles;
};

HandleTable<MPI_Request>& requests()
{
    static HandleTable<MPI_Request> table(MPI_REQUEST_NULL);
    return table;
}

HandleTable<MPI_Message>& messages()
{
    static HandleTable<MPI_Message> table(MPI_MESSAGE_NULL);
    return table;
}

void copy_text(char* out, size_t size, const char* text)
{
    if (size == 0)
        return;
    std::snprintf(out, size, "%s", text);
    if (char* newline = std::strchr(out, '\n'))
        *newline = '\0';
}

} // namespace

extern "C" {

int kforge_mpi_abi_version(void)
{
    return KFORGE_MPI_ABI_VERSION;
}

int kforge_mpi_init(kforge_mpi_world* world)
{
    std::memset(world, 0, sizeof *world);
    // Open MPI's MPI_Finalize starts with a fence over every rank of the job, and a rank that died
    // never reaches it: under --enable-recovery the survivors then waited in MPI_Finalize for ever
    // (seen as ranks at ~10% CPU after a test killed a rank; it happened on some runs only, as the
    // runtime's handling of the death raced the fence). kforge needs no such barrier at the end:
    // every message is delivered or given up before finalizing (util/mpi_world.cpp), so the fence is
    // switched off unless the user set it. Other MPI libraries ignore the variable.
    setenv("OMPI_MCA_async_mpi_finalize", "1", 0);
    int provided = 0;
    if (int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided); rc != MPI_SUCCESS)
        return rc;
    world->thread_level = provided;
    if (int rc = MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN); rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(MPI_COMM_WORLD, &world->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world->size);
    MPI_Comm local = MPI_COMM_NULL;
    if (int rc = MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world->rank, MPI_INFO_NULL, &local);
        rc != MPI_SUCCESS)
        return rc;
    MPI_Comm_rank(local, &world->local_rank);
    MPI_Comm_size(local, &world->local_size);
    MPI_Comm_free(&local);
    int length = 0;
    char name[MPI_MAX_PROCESSOR_NAME] = {};
    MPI_Get_processor_name(name, &length);
    copy_text(world->processor, sizeof world->processor, name);
    char version[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    MPI_Get_library_version(version, &length);
    copy_text(world->library, sizeof world->library, version);
    return MPI_SUCCESS;
}

int kforge_mpi_isend(int dest, int tag, const void* data, size_t size, int64_t* request)
{
    if (size > static_cast<size_t>(INT_MAX))
        return MPI_ERR_COUNT;
    MPI_Request handle = MPI_REQUEST_NULL;
    int rc = MPI_Isend(data, static_cast<int>(size), MPI_BYTE, dest, tag, MPI_COMM_WORLD, &handle);
    if (rc == MPI_SUCCESS)
        *request = requests().add(handle);
    return rc;
}

int kforge_mpi_test(int64_t request, int* done)
{
    MPI_Request* handle = requests().at(request);
    if (!handle)
        return MPI_ERR_REQUEST;
    int rc = MPI_Test(handle, done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS || *done)
        requests().release(request);
    return rc;
}

void kforge_mpi_abandon(int64_t request)
{
    if (MPI_Request* handle = requests().at(request)) {
        MPI_Request_free(handle);
        requests().release(request);
    }
}

int kforge_mpi_probe(int* found, int* source, int* tag, size_t* size, int64_t* message)
{
    MPI_Message handle = MPI_MESSAGE_NULL;
    MPI_Status status;
    int rc = MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, found, &handle, &status);
    if (rc != MPI_SUCCESS || !*found)
        return rc;
    int count = 0;
    MPI_Get_count(&status, MPI_BYTE, &count);
    *source = status.MPI_SOURCE;
    *tag = status.MPI_TAG;
    *size = static_cast<size_t>(count);
    *message = messages().add(handle);
    return MPI_SUCCESS;
}

int kforge_mpi_receive(int64_t message, void* data, size_t size, int64_t* request)
{
    MPI_Message* handle = messages().at(message);
    if (!handle)
        return MPI_ERR_ARG;
    MPI_Request receive = MPI_REQUEST_NULL;
    int rc = MPI_Imrecv(data, static_cast<int>(size), MPI_BYTE, handle, &receive);
    messages().release(message); // MPI_Imrecv consumed the matched message
    if (rc == MPI_SUCCESS)
        *request = requests().add(receive);
    return rc;
}

int kforge_mpi_finalize(void)
{
    return MPI_Finalize();
}

void kforge_mpi_error_text(int code, char* text, size_t size)
{
    char buffer[MPI_MAX_ERROR_STRING] = {};
    int length = 0;
    if (MPI_Error_string(code, buffer, &length) != MPI_SUCCESS)
        std::snprintf(buffer, sizeof buffer, "MPI error %d", code);
    copy_text(text, size, buffer);
}

} // extern "C"
