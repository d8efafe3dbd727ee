// Helpers for the Python side: exceptions unwrapped and described, and the one-byte
// completion signal on a pipe that PendingCall (Calls.cs) writes, so Python awaits
// .NET work on its event loop without parking a thread per call (see
// tether_clr/clr/tasks.py).
using System;
using System.Runtime.InteropServices;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Bridge
{
    public static class TaskBridge
    {
        // The exception a faulted task carries, with AggregateException and
        // TargetInvocationException layers removed.
        public static Exception Unwrap(Exception error)
        {
            while (true)
            {
                var aggregate = error as AggregateException;
                if (aggregate != null && aggregate.InnerExceptions.Count == 1) { error = aggregate.InnerExceptions[0]; continue; }
                var invocation = error as System.Reflection.TargetInvocationException;
                if (invocation != null && invocation.InnerException != null) { error = invocation.InnerException; continue; }
                return error;
            }
        }

        public static string Describe(Exception error)
        {
            error = Unwrap(error);
            return error.GetType().FullName + ": " + error.Message;
        }

        // The bridge's own binder failed: the arguments never reached the method.
        public static bool IsBindingError(Exception error)
        {
            return Unwrap(error) is ArgumentBindingException;
        }

    }

    static class Posix
    {
        static readonly byte[] One = { 1 };

        [DllImport("libc", EntryPoint = "write", SetLastError = true)]
        static extern IntPtr WriteLibc(int fd, byte[] buffer, IntPtr count);

        [DllImport("libc.so.6", EntryPoint = "write", SetLastError = true)]
        static extern IntPtr WriteLibc6(int fd, byte[] buffer, IntPtr count);

        const int EINTR = 4;

        // Writes one byte to `fd` (which stays open), retrying a write a signal interrupted.
        // Mono maps "libc" through its dllmap; CoreCLR may need the versioned soname.
        public static void Signal(int fd)
        {
            try
            {
                while (WriteLibc(fd, One, (IntPtr)1) == (IntPtr)(-1) && Marshal.GetLastWin32Error() == EINTR) { }
            }
            catch (DllNotFoundException)
            {
                while (WriteLibc6(fd, One, (IntPtr)1) == (IntPtr)(-1) && Marshal.GetLastWin32Error() == EINTR) { }
            }
            catch (EntryPointNotFoundException)
            {
                while (WriteLibc6(fd, One, (IntPtr)1) == (IntPtr)(-1) && Marshal.GetLastWin32Error() == EINTR) { }
            }
        }
    }

    // Raised when JSON arguments cannot be bound to a .NET parameter; becomes INVALID_ARGS.
    public sealed class ArgumentBindingException : Exception
    {
        public ArgumentBindingException(string message) : base(message) { }
    }
}
