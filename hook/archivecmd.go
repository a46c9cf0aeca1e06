package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/labhub/teamspace/hook/archive"
)

// runArchive is `teamspace-hook archive list [--archive-* flags]`: the
// records of the archive the server's flags name, oldest first, as the
// operator's report shows them (hack/deploy/status.sh prints this section
// as it is). An archive that cannot be read is reported in one line and
// the command succeeds, so that the report goes on; only bad flags fail.
func runArchive(args []string, out io.Writer) error {
	if len(args) == 0 || args[0] != "list" {
		return errors.New("usage: teamspace-hook archive list [--archive-dir DIR | --archive-s3-* flags]")
	}
	var o options
	flags := flag.NewFlagSet("teamspace-hook archive list", flag.ContinueOnError)
	registerArchiveFlags(flags, &o)
	if err := flags.Parse(args[1:]); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("archive list takes flags only, got %q", flags.Arg(0))
	}
	if err := checkArchiveFlags(flags, &o); err != nil {
		return err
	}
	ctx := context.Background()
	if o.s3.Endpoint == "" {
		fmt.Fprintf(out, "Archive records (%s):\n", o.archiveDir)
		ls, err := archive.ListDir(o.archiveDir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			fmt.Fprintf(out, "  none: %s does not exist (no TeamSpace archived here yet, or not the hook's --archive-dir)\n", o.archiveDir)
		case errors.Is(err, syscall.ENOTDIR):
			fmt.Fprintf(out, "  none: %s is not a directory\n", o.archiveDir)
		case errors.Is(err, fs.ErrPermission):
			fmt.Fprintf(out, "  cannot read %s (permission denied: run as root or as the hook's user)\n", o.archiveDir)
		case err != nil:
			fmt.Fprintf(out, "  cannot read %s: %v\n", o.archiveDir, err)
		default:
			printListing(out, o.archiveDir, ls)
		}
		return nil
	}
	label := o.s3.String()
	fmt.Fprintf(out, "Archive records (%s):\n", label)
	s, err := archive.OpenS3(ctx, o.s3)
	var ls []archive.Listed
	if err == nil {
		ls, err = s.List(ctx)
	}
	if err != nil {
		fmt.Fprintf(out, "  cannot read the bucket: %v\n", err)
		return nil
	}
	printListing(out, label, ls)
	return nil
}

// printListing prints NAME, UID, FILE, DELETED AT (the deletion's time, else
// the file's, marked) and a count; a file that is not a record is named by
// its file name and marked (unreadable).
func printListing(out io.Writer, where string, ls []archive.Listed) {
	if len(ls) == 0 {
		fmt.Fprintf(out, "  none: %s holds no records\n", where)
		return
	}
	tw := tabwriter.NewWriter(out, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  NAME\tUID\tFILE\tDELETED AT")
	unreadable := 0
	for _, l := range ls {
		name, uid := l.Name, l.UID
		if name == "" {
			name, _, _ = strings.Cut(filepath.Base(l.File), ".")
		}
		if uid == "" {
			uid = "(unreadable)"
			unreadable++
		}
		when, fromFile := l.When()
		at := when.UTC().Format(time.RFC3339)
		if fromFile {
			at += " (file mtime)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", name, uid, l.File, at)
	}
	tw.Flush()
	fmt.Fprintf(out, "  %d record%s", len(ls), map[bool]string{true: "", false: "s"}[len(ls) == 1])
	if unreadable > 0 {
		fmt.Fprintf(out, ", %d unreadable (not a TeamSpace record)", unreadable)
	}
	fmt.Fprintln(out)
}
