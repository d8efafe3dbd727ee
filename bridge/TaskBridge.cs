// Completion of a .NET Task becomes one callback, so Python awaits .NET work
// without parking a thread per call: the callback only schedules a wake-up on
// the event loop (see tether_clr/clr/tasks.py).
using System;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Bridge
{
    public static class TaskBridge
    {
        // Runs `callback` once `task` has finished (ran to completion, faulted or
        // cancelled), on a thread-pool thread. The callback must never throw into
        // the pool: an unhandled exception there would take the whole process down.
        public static void OnCompleted(Task task, Action callback)
        {
            if (task == null) throw new ArgumentNullException("task");
            if (callback == null) throw new ArgumentNullException("callback");
            task.ContinueWith(
                delegate(Task _) { try { callback(); } catch (Exception) { } },
                CancellationToken.None,
                TaskContinuationOptions.None,
                TaskScheduler.Default);
        }

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

        public static bool IsCancellation(Exception error)
        {
            return Unwrap(error) is OperationCanceledException;
        }

        // The bridge's own binder failed: the arguments never reached the method.
        public static bool IsBindingError(Exception error)
        {
            return Unwrap(error) is ArgumentBindingException;
        }

        // What Microsoft.Extensions.AI raises when arguments do not fit an AIFunction.
        public static bool IsArgumentError(Exception error)
        {
            var inner = Unwrap(error);
            if (inner is ArgumentBindingException || inner is ArgumentException) return true;
            // System.Text.Json's JsonException, raised by AIFunctionFactory's marshalling, by name.
            return inner.GetType().FullName == "System.Text.Json.JsonException";
        }

        // Result of a finished Task<string> (the bridge's own invocations).
        public static string ResultOf(Task<string> task)
        {
            return task.Result;
        }
    }

    // Raised when JSON arguments cannot be bound to a .NET parameter; becomes INVALID_ARGS.
    public sealed class ArgumentBindingException : Exception
    {
        public ArgumentBindingException(string message) : base(message) { }
    }
}
