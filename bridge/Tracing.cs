// Handing the Python side's W3C trace context to a .NET tool as the parent of its Activities.
//
// When the Python side traces a call (tether_clr.telemetry), it passes the traceparent and
// tracestate of the call's body span to PendingCall.StartTraced. Before the tool is invoked, an
// Activity named "tether.dotnet.body" is started with that parent and made Activity.Current on
// the calling thread: the tool's invocation (Task.Run captures the execution context) sees it,
// so an Activity the tool starts through its own ActivitySource is its child, in the same trace.
// The carrier comes from the ActivitySource "Tether.Clr" when a listener (the .NET OpenTelemetry
// SDK with AddSource("Tether.Clr")) samples it, so a .NET exporter records it too; otherwise it is
// a plain Activity that no exporter sees. Right after the invocation starts, the calling thread's
// Activity.Current is put back; the carrier stops when the call has finished.
//
// System.Diagnostics.DiagnosticSource is reached by reflection (the bridge compiles against Mono's
// mscorlib, which lacks it, and must load where it is absent), and it must be the copy the tool
// itself binds: its Activity.Current is a static of that copy. So it is loaded by the name the
// tool's assembly references, in the tool's own load context on CoreCLR (where a folder's newer
// copy wins over the framework's) and through the AppDomain (the probe folders) on Mono. Where it
// cannot be loaded (Mono with no folder holding it), StartTraced starts the call without a parent
// and says so, and the Python side warns once.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Reflection;

namespace Tether.Bridge
{
    public sealed class ActivityParent
    {
        public const string DiagnosticSourceName = "System.Diagnostics.DiagnosticSource";
        public const string SourceName = "Tether.Clr";
        public const string CarrierName = "tether.dotnet.body";
        const string LoadContextTypeName = "System.Runtime.Loader.AssemblyLoadContext";

        // Per tool assembly: its Activity API, or Missing where DiagnosticSource cannot be loaded.
        static readonly ConcurrentDictionary<Assembly, ActivityParent> ByTool = new ConcurrentDictionary<Assembly, ActivityParent>();
        static readonly ConcurrentDictionary<Assembly, ActivityParent> ByDiagnosticSource = new ConcurrentDictionary<Assembly, ActivityParent>();
        static readonly ActivityParent Missing = new ActivityParent();

        readonly ConstructorInfo _new;
        readonly MethodInfo _setParentId;
        readonly PropertyInfo _traceState;
        readonly MethodInfo _start;
        readonly MethodInfo _stop;
        readonly PropertyInfo _current;
        readonly object _source;          // an ActivitySource (DiagnosticSource 5.0 and later), or null
        readonly MethodInfo _hasListeners;
        readonly MethodInfo _startActivity;
        readonly object _internalKind;

        ActivityParent() { }

        ActivityParent(Assembly diagnostics)
        {
            var activity = diagnostics.GetType("System.Diagnostics.Activity", true);
            _new = activity.GetConstructor(new[] { typeof(string) });
            _setParentId = activity.GetMethod("SetParentId", new[] { typeof(string) });
            _traceState = activity.GetProperty("TraceStateString");
            _start = activity.GetMethod("Start", Type.EmptyTypes);
            _stop = activity.GetMethod("Stop", Type.EmptyTypes);
            _current = activity.GetProperty("Current", BindingFlags.Public | BindingFlags.Static);
            if (_new == null || _setParentId == null || _start == null || _stop == null || _current == null || _current.GetSetMethod() == null)
                throw new NotSupportedException(diagnostics.FullName + " has no settable Activity.Current");
            var sourceType = diagnostics.GetType("System.Diagnostics.ActivitySource");
            var kindType = diagnostics.GetType("System.Diagnostics.ActivityKind");
            if (sourceType == null || kindType == null) return;
            foreach (var method in sourceType.GetMethods())
            {
                var parameters = method.GetParameters();
                if (method.Name == "StartActivity" && parameters.Length == 6 && parameters[0].ParameterType == typeof(string)
                    && parameters[1].ParameterType == kindType && parameters[2].ParameterType == typeof(string))
                    _startActivity = method;
            }
            _hasListeners = sourceType.GetMethod("HasListeners", Type.EmptyTypes);
            if (_startActivity == null || _hasListeners == null) return;
            _internalKind = Enum.ToObject(kindType, 0); // ActivityKind.Internal
            var create = sourceType.GetConstructor(new[] { typeof(string), typeof(string) });
            if (create != null) _source = create.Invoke(new object[] { SourceName, null });
        }

        // The Activity API the tool in `tool` binds, or null where DiagnosticSource cannot be loaded.
        public static ActivityParent For(Assembly tool)
        {
            if (tool == null) return null;
            var found = ByTool.GetOrAdd(tool, Find);
            return ReferenceEquals(found, Missing) ? null : found;
        }

        static ActivityParent Find(Assembly tool)
        {
            try
            {
                var diagnostics = LoadAsTheToolWould(tool);
                return diagnostics == null ? Missing : ByDiagnosticSource.GetOrAdd(diagnostics, a => new ActivityParent(a));
            }
            catch (Exception)
            {
                return Missing;
            }
        }

        static Assembly LoadAsTheToolWould(Assembly tool)
        {
            AssemblyName wanted = null;
            foreach (var reference in tool.GetReferencedAssemblies())
                if (reference.Name == DiagnosticSourceName) { wanted = reference; break; }
            if (wanted == null) wanted = new AssemblyName(DiagnosticSourceName);
            var contexts = Type.GetType(LoadContextTypeName) ?? typeof(object).Assembly.GetType(LoadContextTypeName);
            if (contexts != null)
            {
                var context = contexts.GetMethod("GetLoadContext", new[] { typeof(Assembly) }).Invoke(null, new object[] { tool });
                if (context != null)
                    return (Assembly)contexts.GetMethod("LoadFromAssemblyName", new[] { typeof(AssemblyName) }).Invoke(context, new object[] { wanted });
            }
            return Assembly.Load(wanted);
        }

        // Starts the carrier under `traceParent` as this thread's Activity.Current; null if the
        // header was refused. Leave() puts the thread's Activity.Current back; Stop() ends the carrier.
        public Carrier Enter(string traceParent, string traceState)
        {
            var previous = _current.GetValue(null, null);
            try
            {
                object activity = null;
                if (_source != null && (bool)_hasListeners.Invoke(_source, null))
                    activity = _startActivity.Invoke(_source, new object[] { CarrierName, _internalKind, traceParent, null, null, default(DateTimeOffset) });
                if (activity == null)
                {
                    activity = _new.Invoke(new object[] { CarrierName });
                    _setParentId.Invoke(activity, new object[] { traceParent });
                    _start.Invoke(activity, null);
                }
                if (!string.IsNullOrEmpty(traceState) && _traceState != null) _traceState.SetValue(activity, traceState, null);
                if (ReferenceEquals(_current.GetValue(null, null), activity)) return new Carrier(this, activity, previous);
                _current.SetValue(null, previous, null);
                return null;
            }
            catch
            {
                _current.SetValue(null, previous, null);
                throw;
            }
        }

        public sealed class Carrier
        {
            readonly ActivityParent _api;
            readonly object _activity;
            readonly object _previous;

            internal Carrier(ActivityParent api, object activity, object previous)
            {
                _api = api;
                _activity = activity;
                _previous = previous;
            }

            public void Leave()
            {
                _api._current.SetValue(null, _previous, null);
            }

            public void Stop()
            {
                try { _api._stop.Invoke(_activity, null); }
                catch (Exception) { } // a listener's failure must not keep the call from signalling
            }
        }
    }
}
