// The fallback binder: JSON values as the fallback reader (Json.cs) returns them -> .NET parameter
// values of a [Description] method. It binds only where the runtime has no System.Text.Json, that
// is on Mono without Microsoft.Extensions.AI; wherever System.Text.Json loads (always on CoreCLR;
// on Mono once a probe folder holds it, see Json.cs) DescribedFunction binds through
// JsonSerializer instead (SystemTextJson.cs, with options that follow these rules), and an
// AIFunction is always bound by Microsoft.Extensions.AI itself. The binder is chosen when the
// function is wrapped, and DescribedFunction.ArgumentBinder says which ("fallback" for this one).
// Rules: strings, booleans and numbers only from their own JSON kind; integers in range (a whole
// double such as 2.0 is accepted); enums by name (any case) or by a defined number; arrays and
// List/IList/IEnumerable/...; Dictionary<string, T>; objects through a public parameterless
// constructor and public writable properties and fields (names in any case; an unknown one is
// refused); DateTime, DateTimeOffset, Guid, TimeSpan from strings; an object parameter gets the
// parsed value itself. Any failure is an ArgumentBindingException naming the argument's path.
// Where System.Text.Json (SystemTextJson.Options) differs, at the edges: it refuses a whole double
// for an integer; takes an enum number that names no member, and names joined by commas (as
// flags); parses dates as ISO 8601 only; reads a decimal exactly (here: through a double); can
// build an object through a constructor with parameters; and gives an object parameter a
// JsonElement (here: Dictionary, List, long, ...). Its messages are its own, after the name.
// tests/test_clr_binding.py holds both paths to the same results everywhere else.
using System;
using System.Collections;
using System.Collections.Generic;
using System.Globalization;
using System.Reflection;

namespace Tether.Bridge
{
    public static class Binder
    {
        public static object Convert(object json, Type type, string path)
        {
            if (type == typeof(object)) return json;
            var underlying = Nullable.GetUnderlyingType(type);
            if (underlying != null) return json == null ? null : Convert(json, underlying, path);
            if (json == null)
            {
                if (!type.IsValueType) return null;
                throw Fail(path, "null is not a valid " + type.Name);
            }
            if (type == typeof(string))
            {
                if (json is string) return json;
                throw Fail(path, "expected a string");
            }
            if (type == typeof(bool))
            {
                if (json is bool) return json;
                throw Fail(path, "expected true or false");
            }
            if (type.IsEnum) return ConvertEnum(json, type, path);
            if (IsInteger(type))
            {
                try
                {
                    if (json is long) return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                    if (json is double && Math.Floor((double)json) == (double)json)
                        return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                }
                catch (OverflowException) { throw Fail(path, "number is out of range for " + type.Name); }
                throw Fail(path, "expected an integer");
            }
            if (type == typeof(double) || type == typeof(float) || type == typeof(decimal))
            {
                if (json is long || json is double) return System.Convert.ChangeType(json, type, CultureInfo.InvariantCulture);
                throw Fail(path, "expected a number");
            }
            if (type == typeof(DateTime) || type == typeof(DateTimeOffset) || type == typeof(Guid) || type == typeof(TimeSpan))
                return ConvertText(json, type, path);
            if (type.IsArray)
            {
                var items = AsList(json, path);
                var array = Array.CreateInstance(type.GetElementType(), items.Count);
                for (var i = 0; i < items.Count; i++) array.SetValue(Convert(items[i], type.GetElementType(), path + "[" + i + "]"), i);
                return array;
            }
            var element = Schema.SequenceElement(type);
            if (element != null)
            {
                var items = AsList(json, path);
                var list = (IList)Activator.CreateInstance(typeof(List<>).MakeGenericType(element));
                for (var i = 0; i < items.Count; i++) list.Add(Convert(items[i], element, path + "[" + i + "]"));
                return list;
            }
            var valueType = Schema.DictionaryValue(type);
            if (valueType != null)
            {
                var entries = AsObject(json, path);
                var dictionary = (IDictionary)Activator.CreateInstance(typeof(Dictionary<,>).MakeGenericType(typeof(string), valueType));
                foreach (var entry in entries) dictionary[entry.Key] = Convert(entry.Value, valueType, path + "." + entry.Key);
                return dictionary;
            }
            return ConvertObject(json, type, path);
        }

        static ArgumentBindingException Fail(string path, string message)
        {
            return new ArgumentBindingException(path + ": " + message);
        }

        static bool IsInteger(Type type)
        {
            return type == typeof(int) || type == typeof(long) || type == typeof(short) || type == typeof(byte)
                || type == typeof(uint) || type == typeof(ulong) || type == typeof(ushort) || type == typeof(sbyte);
        }

        static object ConvertEnum(object json, Type type, string path)
        {
            var text = json as string;
            if (text != null)
            {
                foreach (var name in Enum.GetNames(type))
                    if (string.Equals(name, text, StringComparison.OrdinalIgnoreCase)) return Enum.Parse(type, name);
                throw Fail(path, "'" + text + "' is not one of " + string.Join(", ", Enum.GetNames(type)));
            }
            if (json is long && Enum.IsDefined(type, System.Convert.ChangeType(json, Enum.GetUnderlyingType(type), CultureInfo.InvariantCulture)))
                return Enum.ToObject(type, json);
            throw Fail(path, "expected one of " + string.Join(", ", Enum.GetNames(type)));
        }

        static object ConvertText(object json, Type type, string path)
        {
            var text = json as string;
            if (text == null) throw Fail(path, "expected a string");
            try
            {
                if (type == typeof(DateTime)) return DateTime.Parse(text, CultureInfo.InvariantCulture, DateTimeStyles.RoundtripKind);
                if (type == typeof(DateTimeOffset)) return DateTimeOffset.Parse(text, CultureInfo.InvariantCulture);
                if (type == typeof(Guid)) return Guid.Parse(text);
                return TimeSpan.Parse(text, CultureInfo.InvariantCulture);
            }
            catch (FormatException) { throw Fail(path, "'" + text + "' is not a valid " + type.Name); }
        }

        static List<object> AsList(object json, string path)
        {
            var list = json as List<object>;
            if (list == null) throw Fail(path, "expected an array");
            return list;
        }

        static Dictionary<string, object> AsObject(object json, string path)
        {
            var entries = json as Dictionary<string, object>;
            if (entries == null) throw Fail(path, "expected an object");
            return entries;
        }

        static object ConvertObject(object json, Type type, string path)
        {
            var entries = AsObject(json, path);
            if (type.IsAbstract || type.IsInterface || (!type.IsValueType && type.GetConstructor(Type.EmptyTypes) == null))
                throw Fail(path, "cannot create a " + type.Name + " (it needs a public parameterless constructor)");
            var instance = Activator.CreateInstance(type);
            var members = Schema.WritableMembers(type);
            foreach (var entry in entries)
            {
                MemberInfo member;
                if (!members.TryGetValue(entry.Key, out member)) throw Fail(path, "unexpected property '" + entry.Key + "'");
                var property = member as PropertyInfo;
                if (property != null) property.SetValue(instance, Convert(entry.Value, property.PropertyType, path + "." + entry.Key), null);
                else ((FieldInfo)member).SetValue(instance, Convert(entry.Value, ((FieldInfo)member).FieldType, path + "." + entry.Key));
            }
            return instance;
        }
    }
}
