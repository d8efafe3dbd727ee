// The two kinds of .NET tool the Python side hosts:
//  * DescribedFunction: a public method marked [Description], wrapped by the bridge;
//  * AIFunctionHandle: a real Microsoft.Extensions.AI AIFunction, driven through its
//    public API by reflection, so the bridge compiles without the package.
// Both expose the same shape: Name, Description, JsonSchema (text), IsConcurrencySafe,
// ArgumentBinder, and, as IJsonFunction (Calls.cs), InvokeAsync(argumentsJson, token) ->
// Task<string> (the result as JSON text) and IsArgumentError.
//
// Arguments are parsed once. An AIFunction's arguments text becomes one System.Text.Json
// document whose property values (JsonElements) go into AIFunctionArguments as they are, the
// shape FunctionInvokingChatClient passes. A [Description] method's arguments bind through
// System.Text.Json too, wherever the runtime can load it (SystemTextJson.cs); only on a runtime
// without it (Mono without Microsoft.Extensions.AI) does the fallback, Json.cs and Binder.cs,
// bind them. ArgumentBinder names the path a function takes.
// Invocation always starts on the thread pool, so a synchronous .NET body never
// blocks the Python event loop.
using System;
using System.Collections;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Reflection;
using System.Threading;
using System.Threading.Tasks;

namespace Tether.Bridge
{
    public sealed class DescribedFunction : IJsonFunction
    {
        // What ArgumentBinder reports when Json.cs and Binder.cs bind (no System.Text.Json here).
        public const string FallbackBinderName = "fallback";

        readonly MethodInfo _method;
        readonly object _target;
        readonly ParameterInfo[] _parameters;
        readonly SystemTextJson _json; // null: the fallback binds

        public DescribedFunction(MethodInfo method, object target)
        {
            if (method == null) throw new ArgumentNullException("method");
            if (!method.IsStatic && target == null) throw new ArgumentException("an instance method needs a target", "target");
            if (method.ContainsGenericParameters) throw new ArgumentException("generic methods cannot be tools: " + method.Name);
            _method = method;
            _target = target;
            _parameters = method.GetParameters();
            Name = method.Name;
            Description = Schema.DescriptionOf(method) ?? "";
            JsonSchema = Schema.ForMethod(method);
            IsConcurrencySafe = Discovery.HasAttributeNamed(method, "ConcurrencySafeAttribute")
                || Discovery.HasAttributeNamed(method.DeclaringType, "ConcurrencySafeAttribute");
            // Chosen once, here: System.Text.Json when the runtime can load it, else the fallback.
            _json = SystemTextJson.Find();
        }

        public string Name { get; private set; }
        public string Description { get; private set; }
        public string JsonSchema { get; private set; }
        public bool IsConcurrencySafe { get; private set; }
        public MethodInfo Method { get { return _method; } }

        // "System.Text.Json" or "fallback" (Json.cs and Binder.cs): which binder this method's arguments take.
        public string ArgumentBinder { get { return _json != null ? SystemTextJson.BinderName : FallbackBinderName; } }

        // Arguments text -> the method's parameter values. The same rules on both paths: a missing
        // required argument, an unknown name, or a value the parameter's type cannot take is an
        // ArgumentBindingException naming the argument; CancellationToken parameters get `token`.
        public object[] Bind(string argumentsJson, CancellationToken token)
        {
            var arguments = _json != null ? _json.ParseArguments(argumentsJson) : ParseFallback(argumentsJson);
            var known = new HashSet<string>(StringComparer.Ordinal);
            var values = new object[_parameters.Length];
            for (var i = 0; i < _parameters.Length; i++)
            {
                var parameter = _parameters[i];
                if (parameter.ParameterType == typeof(CancellationToken)) { values[i] = token; continue; }
                known.Add(parameter.Name);
                object json;
                if (arguments.TryGetValue(parameter.Name, out json)) values[i] = Convert(json, parameter);
                else if (parameter.HasDefaultValue) values[i] = parameter.DefaultValue;
                else throw new ArgumentBindingException(parameter.Name + ": missing required argument");
            }
            foreach (var key in arguments.Keys)
                if (!known.Contains(key)) throw new ArgumentBindingException(key + ": unexpected argument");
            return values;
        }

        static Dictionary<string, object> ParseFallback(string argumentsJson)
        {
            object parsed;
            try { parsed = Json.Parse(string.IsNullOrWhiteSpace(argumentsJson) ? "{}" : argumentsJson); }
            catch (FormatException error) { throw new ArgumentBindingException(error.Message); }
            var arguments = parsed as Dictionary<string, object>;
            if (arguments == null) throw new ArgumentBindingException("arguments must be a JSON object");
            return arguments;
        }

        object Convert(object json, ParameterInfo parameter)
        {
            if (_json == null) return Binder.Convert(json, parameter.ParameterType, parameter.Name);
            try { return _json.Deserialize(json, parameter.ParameterType); }
            catch (Exception error)
            {
                // Whatever JsonSerializer throws here (JsonException, NotSupportedException for a type
                // it cannot create, a converter's own exception) happened before the body ran.
                throw new ArgumentBindingException(parameter.Name + ": " + Shorten(TaskBridge.Unwrap(error).Message));
            }
        }

        // JsonException messages end with where the reader was in the argument's own text
        // ("... Path: $.location.x | LineNumber: 0 | BytePositionInLine: 12."): a path inside the
        // argument is kept, the position and a bare "$" (the argument itself) are dropped.
        static string Shorten(string message)
        {
            var path = message.IndexOf(" Path: $", StringComparison.Ordinal);
            if (path < 0) return message;
            var end = message.IndexOf(" | LineNumber:", path, StringComparison.Ordinal);
            var where = (end < 0 ? message.Substring(path) : message.Substring(path, end - path)).TrimEnd('.');
            return message.Substring(0, path) + (where == " Path: $" ? "" : where + ".");
        }

        public Assembly ToolAssembly { get { return _method.DeclaringType == null ? _method.Module.Assembly : _method.DeclaringType.Assembly; } }

        public Task<string> InvokeAsync(string argumentsJson, CancellationToken token)
        {
            object[] values;
            try { values = Bind(argumentsJson, token); }
            catch (Exception error) { return Completion.Faulted(error); }
            return Task.Run(() => Completion.ToJson(_method.Invoke(_target, values), _method.ReturnType), token);
        }

        public bool IsArgumentError(Exception error)
        {
            return TaskBridge.IsBindingError(error);
        }
    }

    public sealed class AIFunctionHandle : IJsonFunction
    {
        public const string AIFunctionTypeName = "Microsoft.Extensions.AI.AIFunction";
        public const string ApprovalRequiredTypeName = "Microsoft.Extensions.AI.ApprovalRequiredAIFunction";

        readonly object _function;
        readonly Type _base;
        readonly ConstructorInfo _argumentsCtor;
        readonly PropertyInfo _servicesProperty;
        readonly PropertyInfo _contextProperty;
        readonly MethodInfo _invoke;
        readonly SystemTextJson _json;
        readonly Func<object, string> _serialize;
        readonly HashSet<string> _declared;
        readonly bool _openNames;
        readonly object _services;
        readonly IDictionary _context;
        readonly string _missingServices;

        public AIFunctionHandle(object function, bool isConcurrencySafe) : this(function, isConcurrencySafe, null, null) { }

        // services: an IServiceProvider handed to every call as AIFunctionArguments.Services;
        // context: copied into a fresh AIFunctionArguments.Context for every call. This is what
        // Microsoft.Extensions.AI's FunctionInvokingChatClient passes (its FunctionInvocationServices).
        public AIFunctionHandle(object function, bool isConcurrencySafe, object services, IDictionary context)
        {
            if (function == null) throw new ArgumentNullException("function");
            _base = Discovery.FindBase(function.GetType(), AIFunctionTypeName);
            if (_base == null) throw new ArgumentException(function.GetType().FullName + " is not a " + AIFunctionTypeName);
            if (services != null && !(services is IServiceProvider))
                throw new ArgumentException(services.GetType().FullName + " is not a System.IServiceProvider", "services");
            _function = function;
            _services = services;
            _context = context;
            var assembly = _base.Assembly;
            var argumentsType = assembly.GetType("Microsoft.Extensions.AI.AIFunctionArguments");
            if (argumentsType == null)
                throw new NotSupportedException("this Microsoft.Extensions.AI version has no AIFunctionArguments (need 9.5 or newer)");
            _argumentsCtor = argumentsType.GetConstructor(new[] { typeof(IDictionary<string, object>) });
            _servicesProperty = argumentsType.GetProperty("Services");
            _contextProperty = argumentsType.GetProperty("Context");
            _invoke = _base.GetMethod("InvokeAsync", new[] { argumentsType, typeof(CancellationToken) });
            if (_argumentsCtor == null || _invoke == null)
                throw new NotSupportedException("unsupported Microsoft.Extensions.AI API: AIFunction.InvokeAsync(AIFunctionArguments, CancellationToken) not found");
            if ((services != null && _servicesProperty == null) || (context != null && _contextProperty == null))
                throw new NotSupportedException("this Microsoft.Extensions.AI version has no AIFunctionArguments.Services / Context");
            Name = (string)Property("Name");
            Description = (string)Property("Description") ?? "";
            // The System.Text.Json this MEAI was built against (its JsonSchema is one of its JsonElements).
            _json = SystemTextJson.For(_base.GetProperty("JsonSchema").PropertyType.Assembly);
            var schema = Property("JsonSchema");
            JsonSchema = schema == null ? "{\"type\":\"object\",\"properties\":{}}" : JsonWriter.Write(schema);
            _declared = DeclaredNames(_json.Parse(JsonSchema), _json, out _openNames);
            _serialize = Serializer(_base.Assembly);
            UnderlyingMethod = Property("UnderlyingMethod") as MethodInfo;
            RequiresApproval = IsApprovalRequired(function, assembly);
            IsConcurrencySafe = isConcurrencySafe || Discovery.HasAttributeNamed(function.GetType(), "ConcurrencySafeAttribute")
                || Discovery.HasAttributeNamed(UnderlyingMethod, "ConcurrencySafeAttribute")
                || (UnderlyingMethod != null && Discovery.HasAttributeNamed(UnderlyingMethod.DeclaringType, "ConcurrencySafeAttribute"));
            if (services == null && UnderlyingMethod != null)
                foreach (var parameter in UnderlyingMethod.GetParameters())
                    if (parameter.ParameterType == typeof(IServiceProvider) && !parameter.HasDefaultValue)
                        _missingServices = Name + " needs an IServiceProvider for its '" + parameter.Name
                            + "' parameter and the host gave none (wrap_aifunction / discover_functions services=)";
        }

        public object Function { get { return _function; } }
        public string Name { get; private set; }
        public string Description { get; private set; }
        public string JsonSchema { get; private set; }
        public bool IsConcurrencySafe { get; private set; }
        public bool RequiresApproval { get; private set; }
        public MethodInfo UnderlyingMethod { get; private set; }

        // The tool's own code: the method MEAI wraps (a lambda's closure lives there too), else the function's type.
        public Assembly ToolAssembly
        {
            get { return UnderlyingMethod != null && UnderlyingMethod.DeclaringType != null ? UnderlyingMethod.DeclaringType.Assembly : _function.GetType().Assembly; }
        }

        // Always "System.Text.Json": the bridge parses the arguments with it, and MEAI binds each value.
        public string ArgumentBinder { get { return SystemTextJson.BinderName; } }

        object Property(string name)
        {
            var property = _base.GetProperty(name);
            return property == null ? null : property.GetValue(_function, null);
        }

        // An ApprovalRequiredAIFunction anywhere in the chain of delegating wrappers, asked the way
        // FunctionInvokingChatClient asks: GetService(typeof(ApprovalRequiredAIFunction)).
        static bool IsApprovalRequired(object function, Assembly abstractions)
        {
            if (Discovery.FindBase(function.GetType(), ApprovalRequiredTypeName) != null) return true;
            var marker = abstractions.GetType(ApprovalRequiredTypeName);
            if (marker == null) return false;
            var getService = function.GetType().GetMethod("GetService", new[] { typeof(Type), typeof(object) });
            return getService != null && getService.Invoke(function, new object[] { marker, null }) != null;
        }

        // The argument names a schema lists. Names beyond "properties" are allowed only when the
        // schema says so itself (additionalProperties other than false, or patternProperties).
        static HashSet<string> DeclaredNames(object schemaElement, SystemTextJson json, out bool open)
        {
            var names = new HashSet<string>(StringComparer.Ordinal);
            var schema = json.Members(schemaElement);
            open = false;
            if (schema == null) return names;
            object properties, additional;
            var listed = schema.TryGetValue("properties", out properties) ? json.Members(properties) : null;
            if (listed != null) foreach (var key in listed.Keys) names.Add(key);
            open = schema.ContainsKey("patternProperties")
                || (schema.TryGetValue("additionalProperties", out additional) && json.Kind(additional) != "False");
            return names;
        }

        // The arguments text is parsed once, by System.Text.Json; each property's JsonElement goes to
        // AIFunctionArguments as it is (detached: valid for as long as the function keeps it). A JSON
        // null stays a JsonElement of kind Null: as a C# null, MEAI's marshalling would hand a value
        // type parameter its default instead of refusing the argument.
        public Task<string> InvokeAsync(string argumentsJson, CancellationToken token)
        {
            Dictionary<string, object> values;
            try { values = _json.ParseArguments(argumentsJson); }
            catch (ArgumentBindingException error) { return Completion.Faulted(error); }
            if (!_openNames)
                foreach (var key in values.Keys)
                    if (!_declared.Contains(key)) return Completion.Faulted(new ArgumentBindingException(key + ": unexpected argument"));
            if (_missingServices != null) return Completion.Faulted(new InvalidOperationException(_missingServices));
            return Task.Run(() =>
            {
                var arguments = _argumentsCtor.Invoke(new object[] { values });
                if (_services != null) _servicesProperty.SetValue(arguments, _services, null);
                if (_context != null)
                {
                    var context = new Dictionary<object, object>();
                    foreach (DictionaryEntry entry in _context) context[entry.Key] = entry.Value;
                    _contextProperty.SetValue(arguments, context, null);
                }
                var pending = _invoke.Invoke(_function, new[] { arguments, (object)token });
                // ValueTask<object?> -> Task<object?>; the type comes from whichever assembly MEAI was built against.
                var asTask = (Task)Reflected.AsTask(pending.GetType()).Invoke(pending, null);
                return Completion.ToJson(asTask, typeof(Task<object>), _serialize);
            }, token);
        }

        // Did a failure happen while binding arguments, before the function's body ran? Decided by
        // the stage, not the exception type: the bridge's own checks, or a frame of
        // AIFunctionFactory's parameter marshalling (MEAI converts each argument before it calls
        // the method, and serializes the result after it returned: a failure there is the tool's).
        // A frame of this function's own UnderlyingMethod anywhere on the stack means its body
        // was running (a nested AIFunction whose binding failed inside the body is the body's
        // failure, TOOL_ERROR); otherwise a marshalling frame means the arguments were being bound.
        public bool FailedWhileBinding(Exception error)
        {
            var inner = TaskBridge.Unwrap(error);
            if (inner is ArgumentBindingException) return true;
            var frames = new System.Diagnostics.StackTrace(inner, false).GetFrames();
            if (frames == null) return false;
            var marshalling = false;
            foreach (var frame in frames)
            {
                var method = frame.GetMethod();
                if (method == null) continue;
                if (UnderlyingMethod != null && Discovery.SameMethod(UnderlyingMethod, method)) return false;
                var type = method.DeclaringType;
                var typeName = type == null ? "" : type.FullName ?? "";
                if (method.Name.StartsWith("<GetParameterMarshaller>", StringComparison.Ordinal)
                    && typeName.StartsWith("Microsoft.Extensions.AI.", StringComparison.Ordinal))
                    marshalling = true;
            }
            return marshalling;
        }

        public bool IsArgumentError(Exception error)
        {
            return FailedWhileBinding(error);
        }

        public bool Wraps(MethodInfo method)
        {
            return Discovery.SameMethod(UnderlyingMethod, method);
        }

        // AIJsonUtilities.DefaultOptions + JsonSerializer.Serialize, when the package provides them.
        // Resolved once per function: reflection on every call would sit on the hot path.
        // MEAI content (an AIContent, or a sequence of them) is written as AIContent, so every
        // part carries its "$type" discriminator ("text", "data", ...) whatever its declared
        // type: the Python side reads text and image parts back from exactly that shape.
        static Func<object, string> Serializer(Assembly abstractions)
        {
            var utilities = abstractions.GetType("Microsoft.Extensions.AI.AIJsonUtilities");
            var options = utilities == null ? null : utilities.GetProperty("DefaultOptions");
            var optionsValue = options == null ? null : options.GetValue(null, null);
            if (optionsValue == null) return null;
            var serializerType = optionsValue.GetType().Assembly.GetType("System.Text.Json.JsonSerializer");
            var serialize = serializerType == null ? null
                : serializerType.GetMethod("Serialize", new[] { typeof(object), typeof(Type), optionsValue.GetType() });
            if (serialize == null) return null;
            var content = abstractions.GetType("Microsoft.Extensions.AI.AIContent");
            return value =>
            {
                var declared = value.GetType();
                if (content != null)
                {
                    if (content.IsInstanceOfType(value)) declared = content;
                    else
                    {
                        var parts = ContentParts(value, content);
                        if (parts != null) { value = parts; declared = parts.GetType(); }
                    }
                }
                return (string)serialize.Invoke(null, new[] { value, declared, optionsValue });
            };
        }

        // A non-empty sequence whose items are all AIContent, as an AIContent[]; null otherwise.
        static Array ContentParts(object value, Type content)
        {
            var items = value as IEnumerable;
            if (items == null || value is string) return null;
            var list = new List<object>();
            foreach (var item in items)
            {
                if (item == null || !content.IsInstanceOfType(item)) return null;
                list.Add(item);
            }
            if (list.Count == 0) return null;
            var parts = Array.CreateInstance(content, list.Count);
            for (var i = 0; i < list.Count; i++) parts.SetValue(list[i], i);
            return parts;
        }
    }

    // Reflection looked up once per type: on Mono one GetMethod costs more than the rest of a call.
    static class Reflected
    {
        static readonly ConcurrentDictionary<Type, MethodInfo> AsTaskMethods = new ConcurrentDictionary<Type, MethodInfo>();
        static readonly ConcurrentDictionary<Type, PropertyInfo> ResultProperties = new ConcurrentDictionary<Type, PropertyInfo>();
        static readonly ConcurrentDictionary<Type, MethodInfo> RawTextMethods = new ConcurrentDictionary<Type, MethodInfo>();

        // ValueTask / ValueTask<T>.AsTask()
        public static MethodInfo AsTask(Type valueTask)
        {
            return AsTaskMethods.GetOrAdd(valueTask, type => type.GetMethod("AsTask", Type.EmptyTypes));
        }

        // Task<T>.Result
        public static PropertyInfo Result(Type task)
        {
            return ResultProperties.GetOrAdd(task, type => type.GetProperty("Result"));
        }

        // System.Text.Json.JsonElement.GetRawText()
        public static MethodInfo RawText(Type element)
        {
            return RawTextMethods.GetOrAdd(element, type => type.GetMethod("GetRawText", Type.EmptyTypes));
        }
    }

    static class Completion
    {
        public static Task<string> Faulted(Exception error)
        {
            var source = new TaskCompletionSource<string>();
            source.SetException(error);
            return source.Task;
        }

        // What a method returned (value, Task, Task<T>, ValueTask, ValueTask<T>) -> its JSON result.
        // The declared return type decides whether there is a value: a Task or ValueTask
        // without a type argument yields null, like a void method.
        public static Task<string> ToJson(object returned, Type declared, Func<object, string> serializer = null)
        {
            var hasValue = declared != typeof(void) && !IsPlainAwaitable(declared);
            if (returned != null && IsValueTask(returned.GetType()))
                returned = Reflected.AsTask(returned.GetType()).Invoke(returned, null);
            var task = returned as Task;
            if (task == null || !IsAwaitable(declared))
                return Task.FromResult(hasValue ? Serialize(returned, serializer) : "null");
            return task.ContinueWith(done =>
            {
                // Rethrown with its original stack: FailedWhileBinding reads where it was thrown.
                if (done.IsFaulted) System.Runtime.ExceptionServices.ExceptionDispatchInfo.Capture(TaskBridge.Unwrap(done.Exception)).Throw();
                if (done.IsCanceled) throw new OperationCanceledException("the .NET task was cancelled");
                return hasValue ? Serialize(Reflected.Result(done.GetType()).GetValue(done, null), serializer) : "null";
            }, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        }

        static bool IsValueTask(Type type)
        {
            return type.FullName != null && type.FullName.StartsWith("System.Threading.Tasks.ValueTask", StringComparison.Ordinal);
        }

        static bool IsAwaitable(Type declared)
        {
            return typeof(Task).IsAssignableFrom(declared) || IsValueTask(declared);
        }

        static bool IsPlainAwaitable(Type declared)
        {
            return declared == typeof(Task) || declared.FullName == "System.Threading.Tasks.ValueTask";
        }

        static string Serialize(object value, Func<object, string> serializer)
        {
            if (value == null || serializer == null || value is string || value.GetType().IsPrimitive
                || value.GetType().FullName == "System.Text.Json.JsonElement")
                return JsonWriter.Write(value);
            return serializer(value);
        }
    }

    public static class Discovery
    {
        public static Type FindBase(Type type, string fullName)
        {
            for (var current = type; current != null; current = current.BaseType)
                if (current.FullName == fullName) return current;
            return null;
        }

        public static bool SameMethod(MethodBase a, MethodBase b)
        {
            return a != null && b != null && a.Module.Equals(b.Module) && a.MetadataToken == b.MetadataToken;
        }

        public static bool HasAttributeNamed(MemberInfo member, string name)
        {
            if (member == null) return false;
            foreach (var attribute in member.GetCustomAttributes(true))
                if (attribute.GetType().Name == name) return true;
            return false;
        }

        // Public methods marked [Description]; instance methods need a public parameterless constructor.
        public static DescribedFunction[] DescribedMethods(Assembly assembly)
        {
            var found = new List<DescribedFunction>();
            foreach (var type in assembly.GetExportedTypes().OrderBy(t => t.FullName, StringComparer.Ordinal))
            {
                if (type.IsGenericTypeDefinition) continue;
                object target = null;
                var methods = type.GetMethods(BindingFlags.Public | BindingFlags.Static | BindingFlags.Instance | BindingFlags.DeclaredOnly)
                    .Where(m => !m.IsSpecialName && Schema.DescriptionOf(m) != null)
                    .OrderBy(m => m.Name, StringComparer.Ordinal);
                foreach (var method in methods)
                {
                    if (!method.IsStatic && target == null)
                    {
                        if (type.IsAbstract || type.GetConstructor(Type.EmptyTypes) == null)
                            throw new InvalidOperationException(type.FullName + "." + method.Name + " is an instance tool but " + type.FullName + " has no public parameterless constructor");
                        target = Activator.CreateInstance(type);
                    }
                    found.Add(new DescribedFunction(method, method.IsStatic ? null : target));
                }
            }
            return found.ToArray();
        }

        // AIFunction instances exposed by public static properties or parameterless static
        // methods whose declared type is an AIFunction or a sequence of them. Members of other
        // types are never evaluated, so discovery runs no unrelated code.
        public static object[] AIFunctions(Assembly assembly)
        {
            var found = new List<object>();
            foreach (var type in assembly.GetExportedTypes().OrderBy(t => t.FullName, StringComparer.Ordinal))
            {
                if (type.IsGenericTypeDefinition) continue;
                foreach (var property in type.GetProperties(BindingFlags.Public | BindingFlags.Static).OrderBy(p => p.Name, StringComparer.Ordinal))
                    if (property.GetIndexParameters().Length == 0 && property.CanRead && Exposes(property.PropertyType))
                        Collect(property.GetValue(null, null), found);
                foreach (var method in type.GetMethods(BindingFlags.Public | BindingFlags.Static).OrderBy(m => m.Name, StringComparer.Ordinal))
                    if (!method.IsSpecialName && !method.ContainsGenericParameters && method.GetParameters().Length == 0 && Exposes(method.ReturnType))
                        Collect(method.Invoke(null, null), found);
            }
            return found.ToArray();
        }

        static bool Exposes(Type declared)
        {
            if (FindBase(declared, AIFunctionHandle.AIFunctionTypeName) != null) return true;
            var element = declared.IsArray ? declared.GetElementType() : Schema.SequenceElement(declared);
            return element != null && FindBase(element, AIFunctionHandle.AIFunctionTypeName) != null;
        }

        static void Collect(object value, List<object> found)
        {
            if (value == null) return;
            if (FindBase(value.GetType(), AIFunctionHandle.AIFunctionTypeName) != null) { found.Add(value); return; }
            var sequence = value as IEnumerable;
            if (sequence == null) return;
            foreach (var item in sequence)
                if (item != null && FindBase(item.GetType(), AIFunctionHandle.AIFunctionTypeName) != null) found.Add(item);
        }
    }
}
