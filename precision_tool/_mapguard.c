/* Memory-mapped reads that survive their file being cut short (precision_tool.fileio, "Mapped reads").
 *
 * Reading a page of a mapped file that another process has truncated meanwhile raises SIGBUS, which kills the
 * process. Once install() has run, a SIGBUS at an address inside a watched buffer instead replaces that page
 * with a page of zeros and counts the fault against the buffer's slot; the faulting instruction then runs again
 * and reads the zeros. Whoever reads a watched buffer asks faulted() afterwards and, for every slot listed,
 * reports the file as having shrunk and drops the buffer (its zero pages are not the file's bytes).
 *
 * install()      -> True once the handler is in place (False where the platform has no such faults handled here)
 * watch(buffer)  -> a slot number for the buffer's address range (-1 when every slot is taken: read instead)
 * unwatch(slot)  -> forget the slot; whether it had faulted since faulted() last looked
 * faulted()      -> the slots that faulted since the last call (and forgets their faults)
 *
 * Only BUS_ADRERR -- a page past the end of a mapped file -- is handled. Any other SIGBUS (a hardware memory error,
 * a misaligned access, one outside every watched buffer, one sent by kill()) meets the disposition there was before
 * install(): the handler puts it back, and a fault then recurs under it (a signal sent by a process is raised
 * again, and the guard is reinstalled should that disposition return).
 * One thread reads watched buffers (the comparison workers); the slots are written only outside the handler.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#if defined(__linux__)
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 64

typedef struct { volatile uintptr_t start, end; volatile sig_atomic_t faults; } Slot;

static Slot slots[SLOTS];
static struct sigaction previous, ours;
static int installed;
static uintptr_t page_size;

static void on_sigbus(int signal_number, siginfo_t *info, void *context) {
    int saved_errno = errno, i;
    (void)context;
    if (info != NULL && info->si_code == BUS_ADRERR) { /* a page past the end of a mapped file: si_addr read */
        uintptr_t address = (uintptr_t)info->si_addr;
        for (i = 0; i < SLOTS; i++) {
            if (slots[i].start <= address && address < slots[i].end) {
                void *page = (void *)(address & ~(page_size - 1));
                if (mmap(page, page_size, PROT_READ | PROT_WRITE, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0)
                    != MAP_FAILED) {
                    slots[i].faults++;
                    errno = saved_errno;
                    return;
                }
                break;
            }
        }
    }
    /* Not ours: as if this handler had never been installed. A fault recurs under the previous disposition when
     * this returns; a signal sent by a process is raised again. Should that disposition return (ignored, or a
     * handler that returns), the guard is put back. */
    if (sigaction(SIGBUS, &previous, &ours) == 0) {
        if (info == NULL || info->si_code <= 0) {
            raise(signal_number);
            sigaction(SIGBUS, &ours, NULL);
        }
    }
    errno = saved_errno;
}

static PyObject *install(PyObject *self, PyObject *unused) {
    struct sigaction action;
    (void)self; (void)unused;
    if (!installed) {
        long size = sysconf(_SC_PAGESIZE);
        if (size <= 0) Py_RETURN_FALSE;
        page_size = (uintptr_t)size;
        memset(&action, 0, sizeof(action));
        action.sa_sigaction = on_sigbus;
        action.sa_flags = SA_SIGINFO | SA_NODEFER;
        sigemptyset(&action.sa_mask);
        if (sigaction(SIGBUS, &action, &previous) != 0) Py_RETURN_FALSE;
        installed = 1;
    }
    Py_RETURN_TRUE;
}

static PyObject *watch(PyObject *self, PyObject *args) {
    PyObject *object;
    Py_buffer view;
    int i;
    (void)self;
    if (!PyArg_ParseTuple(args, "O", &object)) return NULL;
    if (PyObject_GetBuffer(object, &view, PyBUF_SIMPLE) < 0) return NULL;
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].end == 0) {
            slots[i].faults = 0;
            slots[i].start = (uintptr_t)view.buf;
            slots[i].end = (uintptr_t)view.buf + (uintptr_t)view.len;
            break;
        }
    }
    PyBuffer_Release(&view);
    return PyLong_FromLong(i < SLOTS ? i : -1);
}

static PyObject *unwatch(PyObject *self, PyObject *args) {
    /* Returns whether the slot had faulted since faulted() last looked: a map freed before its reader asked must
     * not take its faults with it. */
    int slot, had = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "i", &slot)) return NULL;
    if (slot >= 0 && slot < SLOTS) {
        slots[slot].end = 0;
        slots[slot].start = 0;
        had = slots[slot].faults != 0;
        slots[slot].faults = 0;
    }
    return PyBool_FromLong(had);
}

static PyObject *faulted(PyObject *self, PyObject *unused) {
    PyObject *found = PyList_New(0), *number;
    int i;
    (void)self; (void)unused;
    if (!found) return NULL;
    for (i = 0; i < SLOTS; i++) {
        if (slots[i].faults) {
            slots[i].faults = 0;
            number = PyLong_FromLong(i);
            if (!number || PyList_Append(found, number) < 0) { Py_XDECREF(number); Py_DECREF(found); return NULL; }
            Py_DECREF(number);
        }
    }
    return found;
}

#else /* no handler here: install() says so, and the callers read instead of mapping */
static PyObject *install(PyObject *self, PyObject *unused) { (void)self; (void)unused; Py_RETURN_FALSE; }
static PyObject *watch(PyObject *self, PyObject *args) { (void)self; (void)args; return PyLong_FromLong(-1); }
static PyObject *unwatch(PyObject *self, PyObject *args) { (void)self; (void)args; Py_RETURN_FALSE; }
static PyObject *faulted(PyObject *self, PyObject *unused) { (void)self; (void)unused; return PyList_New(0); }
#endif

static PyMethodDef methods[] = {
    {"install", install, METH_NOARGS, "install() -> whether SIGBUS in watched buffers now reads zeros"},
    {"watch", watch, METH_VARARGS, "watch(buffer) -> slot number (-1: no slot free)"},
    {"unwatch", unwatch, METH_VARARGS, "unwatch(slot) -> forget a watched buffer; whether it had faulted"},
    {"faulted", faulted, METH_NOARGS, "faulted() -> slots that faulted since the last call"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_mapguard",
                                    "Memory-mapped reads that survive their file being cut short.", -1, methods,
                                    NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__mapguard(void) { return PyModule_Create(&module); }
