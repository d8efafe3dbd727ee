// System.Text.Json, reached by reflection: the bridge compiles against Mono's mscorlib, which has
// no System.Text.Json, and it must load where neither System.Text.Json nor Microsoft.Extensions.AI
// is present. Each entry point is compiled once per System.Text.Json assembly into a delegate
// (System.Linq.Expressions), so a call pays no reflection.
//
// The bridge binds arguments through it wherever it is there:
//  * AIFunctionHandle (always: MEAI itself needs it): the arguments text is parsed once into one
//    JsonElement and its property values go into AIFunctionArguments as they are; MEAI's parameter
//    marshalling then deserializes each (JsonSerializer.Deserialize(element, typeInfo)).
//  * DescribedFunction, when the runtime can load System.Text.Json (CoreCLR ships it; Mono loads
//    it from a probe folder once one holds it, e.g. TETHER_MEAI_DIR after load_meai()): the same
//    parse, then JsonSerializer.Deserialize(element, parameterType, Options) per parameter, which
//    reads the value's UTF-8 bytes where they lie in that one document (nothing is written back
//    out as text to be parsed again, as the bridge did per value before).
// Only a DescribedFunction on a runtime without it (Mono without Microsoft.Extensions.AI) binds
// through the fallback, Json.cs and Binder.cs.
using System;
using System.Collections.Concurrent;
using System.Collections.Generic;
using System.Linq;
using System.Linq.Expressions;
using System.Reflection;

namespace Tether.Bridge
{
    public sealed class SystemTextJson
    {
        // What DescribedFunction.ArgumentBinder and AIFunctionHandle.ArgumentBinder report for this path.
        public const string BinderName = "System.Text.Json";
        public const string SimpleName = "System.Text.Json";

        static readonly ConcurrentDictionary<Assembly, SystemTextJson> ByAssembly = new ConcurrentDictionary<Assembly, SystemTextJson>();

        readonly Func<string, object> _parse;
        readonly Func<object, Dictionary<string, object>> _members;
        readonly Func<object, string> _kind;
        readonly Func<object, Type, object> _deserialize;

        SystemTextJson(Assembly assembly)
        {
            Assembly = assembly;
            ElementType = Required(assembly, "System.Text.Json.JsonElement");
            _parse = CompileParse(assembly, ElementType);
            _members = CompileMembers(ElementType);
            _kind = CompileKind(ElementType);
            Options = CreateOptions(assembly);
            _deserialize = CompileDeserialize(assembly, ElementType, Options);
        }

        public Assembly Assembly { get; private set; }
        public Type ElementType { get; private set; }

        // The JsonSerializerOptions a DescribedFunction binds with: the fallback binder's rules where
        // System.Text.Json has them (names case-insensitive, enums by name, public fields, unknown
        // members refused, numbers only from JSON numbers). MEAI functions bind with their own options.
        public object Options { get; private set; }

        // The System.Text.Json of this assembly, compiled once; throws when it lacks what the bridge uses.
        public static SystemTextJson For(Assembly assembly)
        {
            if (assembly == null) throw new ArgumentNullException("assembly");
            return ByAssembly.GetOrAdd(assembly, candidate => Checked(new SystemTextJson(candidate)));
        }

        // For a DescribedFunction: the newest System.Text.Json already loaded, else the one the runtime
        // loads by name (CoreCLR's own; on Mono one from a probe folder, AssemblyProbe.cs), provided it
        // works end to end; null when there is none (Mono without it: the fallback binds).
        public static SystemTextJson Find()
        {
            var loaded = AppDomain.CurrentDomain.GetAssemblies()
                .Where(a => a.GetName().Name == SimpleName)
                .OrderByDescending(a => a.GetName().Version)
                .FirstOrDefault();
            try
            {
                if (loaded == null) loaded = System.Reflection.Assembly.Load(new AssemblyName(SimpleName));
                return For(loaded);
            }
            catch (Exception)
            {
                return null; // not there, or unusable (a dependency missing): the fallback binds
            }
        }

        // JSON text -> a detached JsonElement (it owns its memory: nothing to dispose, valid forever).
        // Invalid text throws System.Text.Json's own exception.
        public object Parse(string text)
        {
            return _parse(text);
        }

        // The members of a JSON object element (values: boxed JsonElements of the same document), or
        // null when the element is not an object. A name given twice is an ArgumentBindingException.
        public Dictionary<string, object> Members(object element)
        {
            return _members(element);
        }

        // JsonValueKind, by name: "Object", "Array", "String", "Number", "True", "False", "Null".
        public string Kind(object element)
        {
            return _kind(element);
        }

        // The arguments of one call: blank text is no arguments; anything but one JSON object, or
        // text System.Text.Json cannot read, is an ArgumentBindingException (INVALID_ARGS).
        public Dictionary<string, object> ParseArguments(string argumentsJson)
        {
            Dictionary<string, object> members;
            try
            {
                members = _members(_parse(string.IsNullOrWhiteSpace(argumentsJson) ? "{}" : argumentsJson));
            }
            catch (ArgumentBindingException) { throw; }
            catch (Exception error)
            {
                throw new ArgumentBindingException("invalid JSON: " + TaskBridge.Unwrap(error).Message);
            }
            if (members == null) throw new ArgumentBindingException("arguments must be a JSON object");
            return members;
        }

        // One JsonElement -> a value of `type`, with Options; System.Text.Json's exceptions as they are.
        public object Deserialize(object element, Type type)
        {
            return _deserialize(element, type);
        }

        // Called by the compiled Members delegate (public: compiled code calls it from outside this type).
        public static void AddMember(Dictionary<string, object> members, string name, object value)
        {
            if (members.ContainsKey(name)) throw new ArgumentBindingException("duplicate property '" + name + "'");
            members.Add(name, value);
        }

        static Type Required(Assembly assembly, string name)
        {
            var type = assembly.GetType(name);
            if (type == null) throw new NotSupportedException(assembly.FullName + " has no " + name);
            return type;
        }

        static MethodInfo RequiredMethod(Type type, string name, params Type[] parameters)
        {
            var method = type.GetMethod(name, parameters);
            if (method == null) throw new NotSupportedException(type.FullName + "." + name + " not found in " + type.Assembly.FullName);
            return method;
        }

        // System.Text.Json 10: JsonElement.Parse(text, options), one detached document.
        // Older (CoreCLR 8's own): JsonDocument.Parse(text, options).RootElement.Clone(), then Dispose.
        static Func<string, object> CompileParse(Assembly assembly, Type elementType)
        {
            var optionsType = Required(assembly, "System.Text.Json.JsonDocumentOptions");
            var text = Expression.Parameter(typeof(string), "text");
            var options = Expression.Default(optionsType);
            var direct = elementType.GetMethod("Parse", BindingFlags.Public | BindingFlags.Static, null, new[] { typeof(string), optionsType }, null);
            Expression body;
            if (direct != null)
            {
                body = Expression.Call(direct, text, options);
            }
            else
            {
                var documentType = Required(assembly, "System.Text.Json.JsonDocument");
                var document = Expression.Variable(documentType, "document");
                body = Expression.Block(
                    elementType,
                    new[] { document },
                    Expression.Assign(document, Expression.Call(RequiredMethod(documentType, "Parse", typeof(string), optionsType), text, options)),
                    Expression.TryFinally(
                        Expression.Call(Expression.Property(document, "RootElement"), RequiredMethod(elementType, "Clone")),
                        Expression.Call(document, RequiredMethod(typeof(IDisposable), "Dispose"))));
            }
            return Expression.Lambda<Func<string, object>>(Expression.Convert(body, typeof(object)), text).Compile();
        }

        // element => element.ValueKind != Object ? null : { each property: AddMember(result, p.Name, p.Value) }
        static Func<object, Dictionary<string, object>> CompileMembers(Type elementType)
        {
            var kindType = elementType.GetProperty("ValueKind").PropertyType;
            var enumerate = RequiredMethod(elementType, "EnumerateObject");
            var enumeratorType = enumerate.ReturnType;
            var propertyType = enumeratorType.GetProperty("Current").PropertyType;
            var boxed = Expression.Parameter(typeof(object), "boxed");
            var element = Expression.Variable(elementType, "element");
            var result = Expression.Variable(typeof(Dictionary<string, object>), "result");
            var enumerator = Expression.Variable(enumeratorType, "enumerator");
            var property = Expression.Variable(propertyType, "property");
            var done = Expression.Label(typeof(Dictionary<string, object>), "done");
            var body = Expression.Block(
                typeof(Dictionary<string, object>),
                new[] { element, result, enumerator, property },
                Expression.Assign(element, Expression.Unbox(boxed, elementType)),
                Expression.IfThen(
                    Expression.NotEqual(
                        Expression.Convert(Expression.Property(element, "ValueKind"), typeof(int)),
                        Expression.Constant(Convert.ToInt32(Enum.Parse(kindType, "Object")))),
                    Expression.Return(done, Expression.Constant(null, typeof(Dictionary<string, object>)))),
                Expression.Assign(result, Expression.New(
                    typeof(Dictionary<string, object>).GetConstructor(new[] { typeof(IEqualityComparer<string>) }),
                    Expression.Constant(StringComparer.Ordinal, typeof(IEqualityComparer<string>)))),
                Expression.Assign(enumerator, Expression.Call(element, enumerate)),
                Expression.Loop(
                    Expression.IfThenElse(
                        Expression.Call(enumerator, RequiredMethod(enumeratorType, "MoveNext")),
                        Expression.Block(
                            Expression.Assign(property, Expression.Property(enumerator, "Current")),
                            Expression.Call(
                                typeof(SystemTextJson).GetMethod("AddMember"),
                                result,
                                Expression.Property(property, "Name"),
                                Expression.Convert(Expression.Property(property, "Value"), typeof(object)))),
                        Expression.Return(done, result))),
                Expression.Label(done, Expression.Constant(null, typeof(Dictionary<string, object>))));
            return Expression.Lambda<Func<object, Dictionary<string, object>>>(body, boxed).Compile();
        }

        static Func<object, string> CompileKind(Type elementType)
        {
            var boxed = Expression.Parameter(typeof(object), "boxed");
            var kind = Expression.Property(Expression.Unbox(boxed, elementType), "ValueKind");
            return Expression.Lambda<Func<object, string>>(Expression.Call(Expression.Convert(kind, typeof(object)), "ToString", Type.EmptyTypes), boxed).Compile();
        }

        // (element, type) => JsonSerializer.Deserialize((JsonElement)element, type, options)
        static Func<object, Type, object> CompileDeserialize(Assembly assembly, Type elementType, object options)
        {
            var serializer = Required(assembly, "System.Text.Json.JsonSerializer");
            var deserialize = RequiredMethod(serializer, "Deserialize", elementType, typeof(Type), options.GetType());
            var boxed = Expression.Parameter(typeof(object), "boxed");
            var type = Expression.Parameter(typeof(Type), "type");
            var call = Expression.Call(deserialize, Expression.Unbox(boxed, elementType), type, Expression.Constant(options, options.GetType()));
            return Expression.Lambda<Func<object, Type, object>>(call, boxed, type).Compile();
        }

        static object CreateOptions(Assembly assembly)
        {
            var optionsType = Required(assembly, "System.Text.Json.JsonSerializerOptions");
            var options = Activator.CreateInstance(optionsType);
            optionsType.GetProperty("PropertyNameCaseInsensitive").SetValue(options, true, null);
            var includeFields = optionsType.GetProperty("IncludeFields");
            if (includeFields != null) includeFields.SetValue(options, true, null);
            // System.Text.Json 8 and newer: a member the type does not have is an error, as in the fallback.
            var unmapped = optionsType.GetProperty("UnmappedMemberHandling");
            if (unmapped != null) unmapped.SetValue(options, Enum.Parse(unmapped.PropertyType, "Disallow"), null);
            // Converters is an IList<JsonConverter> (not a non-generic IList): added to through ICollection<JsonConverter>.
            var converters = optionsType.GetProperty("Converters").GetValue(options, null);
            var add = typeof(ICollection<>).MakeGenericType(Required(assembly, "System.Text.Json.Serialization.JsonConverter")).GetMethod("Add");
            add.Invoke(converters, new[] { Activator.CreateInstance(Required(assembly, "System.Text.Json.Serialization.JsonStringEnumConverter")) });
            return options;
        }

        // Runs every compiled entry point once, so a System.Text.Json whose dependencies cannot load
        // (System.Memory, ...) is refused here rather than failing a tool call later.
        static SystemTextJson Checked(SystemTextJson json)
        {
            var members = json.ParseArguments("{\"n\":[1,2],\"s\":\"\\u00e9\",\"e\":\"Friday\",\"d\":{\"k\":1}}");
            var numbers = (List<int>)json.Deserialize(members["n"], typeof(List<int>));
            var text = (string)json.Deserialize(members["s"], typeof(string));
            var day = (DayOfWeek)json.Deserialize(members["e"], typeof(DayOfWeek));
            var map = (Dictionary<string, long>)json.Deserialize(members["d"], typeof(Dictionary<string, long>));
            if (numbers.Count != 2 || text != "\u00e9" || day != DayOfWeek.Friday || map["k"] != 1 || json.Kind(members["d"]) != "Object")
                throw new NotSupportedException(json.Assembly.FullName + " did not read its own check correctly");
            return json;
        }
    }
}
