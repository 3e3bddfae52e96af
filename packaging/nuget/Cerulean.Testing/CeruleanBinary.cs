using System.Runtime.InteropServices;

namespace Cerulean.Testing;

/// <summary>Thrown when no server executable is found: the platform has no prebuilt server in the
/// package, or the path given does not exist. Its message says how to point at one.</summary>
public sealed class CeruleanBinaryNotFoundException : FileNotFoundException
{
    internal CeruleanBinaryNotFoundException(string message, string? path) : base(message, path) { }
}

/// <summary>Finds the server executable.</summary>
public static partial class CeruleanBinary
{
    /// <summary>The environment variable that names a server executable.</summary>
    public const string EnvironmentVariable = "CERULEAN_BINARY";

    /// <summary>The executable a server would run: <paramref name="explicitPath"/>, else
    /// <c>$CERULEAN_BINARY</c>, else the package's server for this process's runtime identifier
    /// (<see cref="CurrentRuntimeIdentifier"/>; on Linux with glibc, the static linux-musl one of
    /// the same architecture when the package has no glibc one).</summary>
    /// <exception cref="CeruleanBinaryNotFoundException">none of those exists.</exception>
    public static string Resolve(string? explicitPath = null)
    {
        if (!string.IsNullOrEmpty(explicitPath))
            return Existing(explicitPath, $"{nameof(CeruleanServerOptions)}.{nameof(CeruleanServerOptions.BinaryPath)}");
        string? fromEnvironment = Environment.GetEnvironmentVariable(EnvironmentVariable);
        if (!string.IsNullOrEmpty(fromEnvironment))
            return Existing(fromEnvironment, $"${EnvironmentVariable}");

        string? rid = CurrentRuntimeIdentifier;
        string orSet = $"or set the environment variable {EnvironmentVariable} to a server executable (or " +
                       $"{nameof(CeruleanServerOptions)}.{nameof(CeruleanServerOptions.BinaryPath)}).";
        if (rid == null)
        {
            throw new CeruleanBinaryNotFoundException(
                $"Cerulean.Testing has no server for {RuntimeInformation.OSDescription} on " +
                $"{RuntimeInformation.ProcessArchitecture} (it can carry one for {string.Join(", ", RuntimeIdentifiers)}). " +
                $"Build the server from source (bash scripts/build.sh in the Cerulean repository) and set " +
                $"{EnvironmentVariable} to its path (build/cerulean), {orSet}", null);
        }
        var searched = new List<string>();
        string? found = PackagedPath(rid, searched);
        if (found == null && rid.StartsWith("linux-", StringComparison.Ordinal) && !rid.StartsWith("linux-musl-", StringComparison.Ordinal))
            found = PackagedPath(rid.Replace("linux-", "linux-musl-", StringComparison.Ordinal), searched);
        if (found != null) return found;
        throw new CeruleanBinaryNotFoundException(
            $"This Cerulean.Testing has no server for {rid}: the build output lacks " +
            $"runtimes/{rid}/native/{ExecutableName(rid)} (looked for {string.Join(", ", searched)}). The package's " +
            $"runtimes/ folder holds the platforms it was built for; {orSet}", searched.FirstOrDefault());
    }

    static string Existing(string path, string source)
    {
        string full = Path.GetFullPath(path);
        if (!File.Exists(full))
            throw new CeruleanBinaryNotFoundException($"{source} names {full}, which does not exist.", full);
        return full;
    }

    /// <summary>Makes <paramref name="path"/> executable if it is not (a NuGet extraction may drop
    /// the bit); returns a path that is, a private copy when the file cannot be changed.</summary>
    internal static string EnsureExecutable(string path)
    {
        if (OperatingSystem.IsWindows()) return path;
        const UnixFileMode execute = UnixFileMode.UserExecute | UnixFileMode.GroupExecute | UnixFileMode.OtherExecute;
        UnixFileMode mode = File.GetUnixFileMode(path);
        if ((mode & UnixFileMode.UserExecute) != 0) return path;
        try
        {
            File.SetUnixFileMode(path, mode | execute);
            return path;
        }
        catch (Exception e) when (e is UnauthorizedAccessException or IOException)
        {
            string dir = Directory.CreateTempSubdirectory("cerulean-bin-").FullName;
            string copy = Path.Combine(dir, "cerulean");
            File.Copy(path, copy);
            File.SetUnixFileMode(copy, UnixFileMode.UserRead | UnixFileMode.UserWrite | UnixFileMode.UserExecute);
            return copy;
        }
    }
}
